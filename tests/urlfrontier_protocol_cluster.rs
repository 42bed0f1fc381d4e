//! The URLFrontier protocol's tests (`urlfrontier_protocol.rs`) against a
//! one-node cluster: each daemon joins a NATS server of its own and serves
//! the protocol once it has taken its partition over, every write going
//! through the replicated log first. `common::frontier::frontier_daemon`
//! starts it so in this binary.

#[path = "urlfrontier_protocol.rs"]
mod protocol;
