//! SIGTERM and SIGINT for the commands that run a job on the data dir: the first asks the job
//! to stop at its next chunk boundary, leaving what it committed whole (the job then ends with
//! an error saying how far it got); a second ends the process at once, as a kill would.

use std::sync::Arc;
use watch_catalogue::jobs::progress::JobControl;

/// Exit status of a process ended by a second signal.
const ENDED_BY_SIGNAL: i32 = 130;

/// Stops `control`'s job at the first SIGTERM or SIGINT, and ends the process at the second,
/// from a thread of its own.
pub fn stop_on_signal(control: Arc<JobControl>) {
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let runtime = match runtime {
                Ok(runtime) => runtime,
                Err(error) => {
                    tracing::warn!(%error, "signals are not handled: SIGTERM ends the job where it stands");
                    return;
                }
            };
            runtime.block_on(async {
                watch_catalogue::server::shutdown_signal().await;
                tracing::warn!("stopping the job at its next chunk boundary; a second signal ends the process now");
                control.stop();
                watch_catalogue::server::shutdown_signal().await;
                std::process::exit(ENDED_BY_SIGNAL);
            });
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "signals are not handled: SIGTERM ends the job where it stands");
    }
}
