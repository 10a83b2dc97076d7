//! An error told whole on one line, its causes outermost first: what the CLI prints, the log
//! keeps, a failed job records and a 500 logs, whichever layer the error came from.

/// `error` and its sources, outermost first, joined by `: `.
pub fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
