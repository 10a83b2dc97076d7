//! What a model's stats can be split by, kept as one dense column of two small codes: a
//! listing's condition and its box-and-papers, a byte each, so that a model's run reads one
//! column more for both, not two (docs/decisions.md, D-206).

use super::PriceGrouping;

/// A listing's codes as the `stats_groups` column holds them: each of the caller's codes plus
/// one, in a byte of its own; 0 for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct GroupCodes(u16);

impl GroupCodes {
    /// The codes of a listing; a code above [`MAX_GROUP_CODE`] has no room and reads as none.
    pub(super) fn of(condition: Option<u64>, box_papers: Option<u64>) -> GroupCodes {
        GroupCodes(u16::from(byte(condition)) | u16::from(byte(box_papers)) << 8)
    }

    /// The codes a column value holds (`None`, or a value no listing was given: no codes).
    pub(super) fn from_column(value: Option<u64>) -> GroupCodes {
        GroupCodes(value.and_then(|v| u16::try_from(v).ok()).unwrap_or(0))
    }

    pub(super) fn column_value(self) -> u64 {
        u64::from(self.0)
    }

    /// The caller's code of `grouping`; `None` when the listing has none.
    pub(super) fn code(self, grouping: PriceGrouping) -> Option<u64> {
        let byte = match grouping {
            PriceGrouping::Condition => self.0 & 0xff,
            PriceGrouping::BoxPapers => self.0 >> 8,
        };
        u64::from(byte).checked_sub(1)
    }
}

/// The largest code a grouping keeps: the callers' are small enumerations.
pub const MAX_GROUP_CODE: u64 = 254;

fn byte(code: Option<u64>) -> u8 {
    code.filter(|&code| code <= MAX_GROUP_CODE)
        .and_then(|code| u8::try_from(code + 1).ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_reads_back_from_the_column_value() {
        for condition in [None, Some(0), Some(5), Some(MAX_GROUP_CODE)] {
            for box_papers in [None, Some(0), Some(3), Some(MAX_GROUP_CODE)] {
                let value = GroupCodes::of(condition, box_papers).column_value();
                let codes = GroupCodes::from_column(Some(value));
                assert_eq!(codes.code(PriceGrouping::Condition), condition);
                assert_eq!(codes.code(PriceGrouping::BoxPapers), box_papers);
            }
        }
    }

    #[test]
    fn codes_without_room_and_odd_values_read_as_none() {
        let wide = GroupCodes::of(Some(MAX_GROUP_CODE + 1), Some(u64::MAX));
        assert_eq!(wide, GroupCodes::default());
        for value in [None, Some(0), Some(u64::from(u16::MAX) + 1)] {
            let codes = GroupCodes::from_column(value);
            assert_eq!(codes.code(PriceGrouping::Condition), None);
            assert_eq!(codes.code(PriceGrouping::BoxPapers), None);
        }
    }
}
