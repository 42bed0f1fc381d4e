//! How a store error reaches a client: the gRPC status it is answered.

use sitemapd_scheduler::StoreError;
use tonic::Status;

/// A store error as the protocol answers it: UNAVAILABLE (the client may
/// retry), logged.
pub(crate) fn store_status(e: StoreError) -> Status {
    tracing::warn!(error = %e, "urlfrontier: store error");
    Status::unavailable(e.to_string())
}
