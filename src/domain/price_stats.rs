//! Low, median and high of a set of asking prices, with the one median rule of the service:
//! for an even number of prices, the mean of the two middle ones, rounded half up; the prices
//! given whole, or read by rank where they are kept sorted.

/// Lowest, median and highest of `prices`; `None` when there are none. The median by
/// selection, not a sort: linear in the number of prices, the same figure.
pub fn price_figures(mut prices: Vec<u64>) -> Option<(u64, u64, u64)> {
    let low = *prices.iter().min()?;
    let high = *prices.iter().max()?;
    let (middle, even) = (prices.len() / 2, prices.len() % 2 == 0);
    // The upper middle in place, every smaller price before it.
    let (below, &mut upper, _) = prices.select_nth_unstable(middle);
    let median = match below.iter().max() {
        Some(&lower) if even => mean_half_up(lower, upper),
        _ => upper,
    };
    Some((low, median, high))
}

/// Lowest, median and highest of `count` prices read by rank (`nth(0)` the lowest, the last
/// rank the highest), as [`price_figures`] takes them: for prices kept sorted in several parts,
/// read without gathering them (a series' prices in each currency).
pub fn figures_by_rank(count: usize, nth: impl Fn(usize) -> u64) -> Option<(u64, u64, u64)> {
    let last = count.checked_sub(1)?;
    let (middle, even) = (count / 2, count % 2 == 0);
    let upper = nth(middle);
    let median = match even {
        true => mean_half_up(nth(middle - 1), upper),
        false => upper,
    };
    Some((nth(0), median, nth(last)))
}

/// `(a + b) / 2` rounded half up, without overflow.
fn mean_half_up(a: u64, b: u64) -> u64 {
    a / 2 + b / 2 + (a % 2 + b % 2).div_ceil(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn figures_by_hand() {
        assert_eq!(price_figures(vec![]), None);
        assert_eq!(price_figures(vec![7]), Some((7, 7, 7)));
        assert_eq!(price_figures(vec![30, 10, 20]), Some((10, 20, 30)));
        // Even count: (10 + 21) / 2 = 15.5, rounded half up to 16.
        assert_eq!(price_figures(vec![21, 40, 10, 1]), Some((1, 16, 40)));
        assert_eq!(
            price_figures(vec![u64::MAX, u64::MAX]),
            Some((u64::MAX, u64::MAX, u64::MAX))
        );
    }

    /// The median as a textbook computes it, in wide integers.
    fn reference_median(prices: &[u64]) -> u64 {
        let mut sorted = prices.to_vec();
        sorted.sort();
        let n = sorted.len();
        if n % 2 == 1 {
            sorted[n / 2]
        } else {
            let sum = u128::from(sorted[n / 2 - 1]) + u128::from(sorted[n / 2]);
            sum.div_ceil(2) as u64
        }
    }

    proptest! {
        #[test]
        fn the_median_agrees_with_a_simple_reference(prices in prop::collection::vec(any::<u64>(), 1..60)) {
            let (low, median, high) = price_figures(prices.clone()).expect("figures");
            prop_assert_eq!(median, reference_median(&prices));
            prop_assert_eq!(low, *prices.iter().min().expect("min"));
            prop_assert_eq!(high, *prices.iter().max().expect("max"));
            prop_assert!(low <= median && median <= high);
        }

        #[test]
        fn figures_by_rank_are_the_figures_of_the_prices(prices in prop::collection::vec(any::<u64>(), 0..60)) {
            let mut sorted = prices.clone();
            sorted.sort_unstable();
            prop_assert_eq!(figures_by_rank(sorted.len(), |rank| sorted[rank]), price_figures(prices));
        }
    }
}
