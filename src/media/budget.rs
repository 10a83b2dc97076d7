//! The decode budget: the pixels of the pictures being decoded and cropped at once, summed,
//! never pass a figure sized from the pixel cap. A picture's memory while it is decoded and
//! cropped grows with its pixels, so however many large pictures arrive together (a provider's
//! feed, admins setting FRONT pictures), the worker's decoding memory is bounded by this
//! figure, not by how many happen to be in hand.
//!
//! A picture reserves its pixels, read from its header before anything is decoded, and holds
//! them until its crop is made. Reservations are served in turn (tokio's semaphore is fair), so
//! a large picture is not overtaken forever by small ones; one larger than the whole budget
//! waits for all of it and then goes alone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct DecodeBudget {
    pixels: Arc<Semaphore>,
    total: u32,
    waiting: AtomicUsize,
}

/// Pixels reserved from a [`DecodeBudget`], given back when dropped.
#[derive(Debug)]
pub struct DecodePermit {
    _pixels: OwnedSemaphorePermit,
}

impl DecodeBudget {
    /// A budget of `pixels` (at least 1; at most `u32::MAX`, some 4 billion pixels).
    pub fn new(pixels: u64) -> DecodeBudget {
        let total = u32::try_from(pixels).unwrap_or(u32::MAX).max(1);
        DecodeBudget {
            pixels: Arc::new(Semaphore::new(total as usize)),
            total,
            waiting: AtomicUsize::new(0),
        }
    }

    /// The whole budget, in pixels.
    pub fn total(&self) -> u64 {
        u64::from(self.total)
    }

    /// Pixels reserved now, with those given back and kept for the picture waiting first.
    pub fn in_use(&self) -> u64 {
        self.total()
            .saturating_sub(self.pixels.available_permits() as u64)
    }

    /// Reservations waiting for pixels to be given back.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Reserves the pixels of a `pixels`-pixel picture (the whole budget at most), waiting
    /// until they are free.
    pub async fn reserve(&self, pixels: u64) -> DecodePermit {
        let wanted = u32::try_from(pixels)
            .unwrap_or(u32::MAX)
            .clamp(1, self.total);
        let _waiting = Waiting::count(&self.waiting);
        match self.pixels.clone().acquire_many_owned(wanted).await {
            Ok(permit) => DecodePermit { _pixels: permit },
            Err(_) => unreachable!("the decode budget's semaphore is never closed"),
        }
    }
}

/// Counts a reservation as waiting until it is granted or given up (its future dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn count(waiting: &'a AtomicUsize) -> Waiting<'a> {
        waiting.fetch_add(1, Ordering::SeqCst);
        Waiting(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields until `budget` has `n` reservations waiting (the spawned ones have run up to
    /// their wait); a bounded number of turns, never a clock.
    async fn until_waiting(budget: &DecodeBudget, n: usize) {
        for _ in 0..1_000 {
            if budget.waiting() == n {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("{} reservations waiting, not {n}", budget.waiting());
    }

    #[tokio::test]
    async fn a_picture_beyond_the_budget_waits_until_pixels_are_given_back() {
        let budget = Arc::new(DecodeBudget::new(100));
        let first = budget.reserve(60).await;
        let second = budget.reserve(40).await;
        assert_eq!((budget.in_use(), budget.waiting()), (100, 0));
        let third = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(50).await }
        });
        until_waiting(&budget, 1).await;
        assert!(!third.is_finished());
        drop(second);
        // 40 given back, not enough for 50: they are kept for the picture waiting first, and a
        // smaller one asking after it does not overtake it.
        let fourth = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(10).await }
        });
        until_waiting(&budget, 2).await;
        assert_eq!(budget.in_use(), 100);
        assert!(!third.is_finished() && !fourth.is_finished());
        drop(first);
        let third = third.await.expect("granted");
        let fourth = fourth.await.expect("granted");
        assert_eq!((budget.in_use(), budget.waiting()), (60, 0));
        drop((third, fourth));
        assert_eq!(budget.in_use(), 0);
    }

    #[tokio::test]
    async fn a_picture_larger_than_the_budget_takes_all_of_it_and_goes_alone() {
        let budget = Arc::new(DecodeBudget::new(100));
        let huge = budget.reserve(u64::MAX).await;
        assert_eq!(budget.in_use(), 100);
        let small = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(1).await }
        });
        until_waiting(&budget, 1).await;
        drop(huge);
        small.await.expect("granted");
        // A picture of no pixels still counts one.
        let none = budget.reserve(0).await;
        assert_eq!(budget.in_use(), 1);
        drop(none);
        assert_eq!(DecodeBudget::new(0).total(), 1);
        assert_eq!(DecodeBudget::new(u64::MAX).total(), u64::from(u32::MAX));
    }

    #[tokio::test]
    async fn a_reservation_given_up_stops_counting_as_waiting() {
        let budget = DecodeBudget::new(10);
        let held = budget.reserve(10).await;
        {
            let wait = budget.reserve(5);
            tokio::pin!(wait);
            assert!(futures_poll_once(wait.as_mut()).await.is_none());
            assert_eq!(budget.waiting(), 1);
        }
        assert_eq!(budget.waiting(), 0);
        drop(held);
    }

    /// Polls `future` once: its output if it is ready at once.
    async fn futures_poll_once<F: std::future::Future + Unpin>(future: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            output = future => Some(output),
            () = std::future::ready(()) => None,
        }
    }
}
