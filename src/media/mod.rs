//! The image pipeline's parts: the content-addressed media store, the address checks and
//! fetcher for source URLs, the decode budget, the crop, and the look that tells alike
//! pictures apart. The worker that drives them is `jobs::pictures`.

pub mod address;
pub mod budget;
pub mod crop;
pub mod fetch;
pub mod look;
pub mod store;

pub use address::AllowedNets;
pub use budget::{DecodeBudget, DecodePermit};
pub use fetch::{FetchError, FetchSettings, Fetcher};
pub use store::MediaStore;
