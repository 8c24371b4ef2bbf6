//! A journal that fails, delays or interrupts the calls a test chooses: a
//! gRPC `Journal` service in front of a real journal that passes every call
//! through to it, except the calls a [`Fault`] is planned for.
//!
//! A test starts the real journal, puts a [`FaultyJournal`] in front of it,
//! points the service under test (a roller, a resolver) at
//! [`FaultyJournal::serve`]'s URL, and plans faults by [`Call`]: the next
//! call of that kind meets the fault, later ones pass on untouched.
//! [`FaultyJournal::injected`] tells whether the service got as far as the
//! faulted call. What a call sees after its fault is the real journal's
//! answer, so a test checks the service against the journal's own
//! behaviour, not against a hand-written imitation of it.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use battlelog_proto::error::Error;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::journal_client::JournalClient;
use tonic::{Request, Response, Status};

use crate::journal_client::Client;

/// One kind of call of the `Journal` service (proto/battlelog/v1/journal.proto).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Append,
    AppendBatch,
    ReadStream,
    ReadAll,
    SubscribeStream,
    SubscribeAll,
    VerifyChain,
    StreamInfo,
    ListBattleIndex,
    ListPendingActions,
    GetCheckpoint,
    GetInclusionProof,
    GetConsistencyProof,
    GetSignedHead,
}

/// Something a test does to the real journal while a call waits (kill it,
/// stop it): its error, if any, is the call's answer.
pub type Action = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = Result<(), Status>> + Send>> + Send>;

/// What the call a fault is planned for meets.
pub enum Fault {
    /// Answered with this status; the real journal never sees the call.
    Fail(Status),
    /// Held this long, then passed on.
    Delay(Duration),
    /// Held while `Action` runs, then passed on over a new connection (the
    /// action may have killed or restarted the journal; the old connection
    /// may still be failing its way out, which ends in UNKNOWN "transport
    /// error" after a varying time rather than the UNAVAILABLE a service
    /// sees when it reconnects).
    Before(Action),
}

impl std::fmt::Debug for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Fail(status) => f.debug_tuple("Fail").field(status).finish(),
            Self::Delay(delay) => f.debug_tuple("Delay").field(delay).finish(),
            Self::Before(_) => f.write_str("Before(..)"),
        }
    }
}

/// SIGKILL of process `pid`, then a wait until `addr` refuses connections:
/// the process is gone (a signalled process still accepts until it exits).
pub fn sigkill(pid: u32, addr: SocketAddr) -> Action {
    Box::new(move || {
        Box::pin(async move {
            let sent = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            if !sent.is_ok_and(|s| s.success()) {
                return Err(Error::internal(format!("the test could not kill process {pid}")).into_status());
            }
            let gone = async {
                while tokio::net::TcpStream::connect(addr).await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            tokio::time::timeout(crate::STARTUP_DEADLINE, gone)
                .await
                .map_err(|_| Error::internal(format!("the killed process {pid} still accepts on {addr}")).into_status())
        })
    })
}

/// A `Journal` service in front of a real journal; see the module docs.
#[derive(Debug)]
pub struct FaultyJournal {
    url: String,
    upstream: Mutex<Client>,
    planned: Mutex<VecDeque<(Call, Fault)>>,
    injected: AtomicUsize,
}

impl FaultyJournal {
    /// In front of the journal at `journal_url`, reached with the tests'
    /// service token; no fault planned yet.
    pub fn new(journal_url: &str) -> Arc<Self> {
        Arc::new(Self {
            url: journal_url.to_owned(),
            upstream: Mutex::new(connect(journal_url)),
            planned: Mutex::new(VecDeque::new()),
            injected: AtomicUsize::new(0),
        })
    }

    /// The next `call` not yet met by a fault meets `fault`; faults planned
    /// for the same kind of call are met in the order planned.
    pub fn plan(&self, call: Call, fault: Fault) {
        self.planned.lock().expect("lock").push_back((call, fault));
    }

    /// How many planned faults calls have met so far.
    pub fn injected(&self) -> usize {
        self.injected.load(Ordering::SeqCst)
    }

    /// Serves it on a free loopback port until the test ends: its URL.
    pub async fn serve(self: &Arc<Self>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let addr = listener.local_addr().expect("addr");
        let server = tonic::transport::Server::builder()
            .add_service(pb::journal_server::JournalServer::from_arc(Arc::clone(self)))
            .serve_with_incoming(battlelog_runtime::grpc::incoming(listener));
        tokio::spawn(server);
        format!("http://{addr}")
    }

    /// Applies the fault planned for `call`, if any: the client to pass the
    /// call on with, or the call's answer.
    async fn meet(&self, call: Call) -> Result<Client, Status> {
        let fault = {
            let mut planned = self.planned.lock().expect("lock");
            let at = planned.iter().position(|(c, _)| *c == call);
            at.and_then(|at| planned.remove(at)).map(|(_, fault)| fault)
        };
        if let Some(fault) = fault {
            self.injected.fetch_add(1, Ordering::SeqCst);
            match fault {
                Fault::Fail(status) => return Err(status),
                Fault::Delay(delay) => tokio::time::sleep(delay).await,
                Fault::Before(action) => {
                    action().await?;
                    *self.upstream.lock().expect("lock") = connect(&self.url);
                }
            }
        }
        Ok(self.upstream.lock().expect("lock").clone())
    }
}

/// A lazily connecting client of the journal at `url`.
fn connect(url: &str) -> Client {
    let token = crate::TestAuth::shared().service_token();
    JournalClient::new(crate::authed_channel(url, &token)).max_decoding_message_size(64 * 1024 * 1024)
}

/// Each call: meet its fault, then pass it on.
macro_rules! pass {
    ($self:ident, $call:ident, $method:ident, $request:ident) => {
        $self.meet(Call::$call).await?.$method($request.into_inner()).await
    };
}

#[tonic::async_trait]
impl pb::journal_server::Journal for FaultyJournal {
    type SubscribeStreamStream = tonic::Streaming<pb::RecordedEvent>;
    type SubscribeAllStream = tonic::Streaming<pb::RecordedEvent>;

    async fn append(&self, request: Request<pb::AppendRequest>) -> Result<Response<pb::AppendResponse>, Status> {
        pass!(self, Append, append, request)
    }

    async fn append_batch(
        &self,
        request: Request<pb::AppendBatchRequest>,
    ) -> Result<Response<pb::AppendBatchResponse>, Status> {
        pass!(self, AppendBatch, append_batch, request)
    }

    async fn read_stream(
        &self,
        request: Request<pb::ReadStreamRequest>,
    ) -> Result<Response<pb::ReadStreamResponse>, Status> {
        pass!(self, ReadStream, read_stream, request)
    }

    async fn read_all(&self, request: Request<pb::ReadAllRequest>) -> Result<Response<pb::ReadAllResponse>, Status> {
        pass!(self, ReadAll, read_all, request)
    }

    async fn subscribe_stream(
        &self,
        request: Request<pb::SubscribeStreamRequest>,
    ) -> Result<Response<Self::SubscribeStreamStream>, Status> {
        pass!(self, SubscribeStream, subscribe_stream, request)
    }

    async fn subscribe_all(
        &self,
        request: Request<pb::SubscribeAllRequest>,
    ) -> Result<Response<Self::SubscribeAllStream>, Status> {
        pass!(self, SubscribeAll, subscribe_all, request)
    }

    async fn verify_chain(
        &self,
        request: Request<pb::VerifyChainRequest>,
    ) -> Result<Response<pb::VerifyChainResponse>, Status> {
        pass!(self, VerifyChain, verify_chain, request)
    }

    async fn stream_info(
        &self,
        request: Request<pb::StreamInfoRequest>,
    ) -> Result<Response<pb::StreamInfoResponse>, Status> {
        pass!(self, StreamInfo, stream_info, request)
    }

    async fn list_battle_index(
        &self,
        request: Request<pb::BattleIndexRequest>,
    ) -> Result<Response<pb::BattleIndexResponse>, Status> {
        pass!(self, ListBattleIndex, list_battle_index, request)
    }

    async fn list_pending_actions(
        &self,
        request: Request<pb::PendingActionsRequest>,
    ) -> Result<Response<pb::PendingActionsResponse>, Status> {
        pass!(self, ListPendingActions, list_pending_actions, request)
    }

    async fn get_checkpoint(
        &self,
        request: Request<pb::GetCheckpointRequest>,
    ) -> Result<Response<pb::GetCheckpointResponse>, Status> {
        pass!(self, GetCheckpoint, get_checkpoint, request)
    }

    async fn get_inclusion_proof(
        &self,
        request: Request<pb::InclusionProofRequest>,
    ) -> Result<Response<pb::InclusionProofResponse>, Status> {
        pass!(self, GetInclusionProof, get_inclusion_proof, request)
    }

    async fn get_consistency_proof(
        &self,
        request: Request<pb::ConsistencyProofRequest>,
    ) -> Result<Response<pb::ConsistencyProofResponse>, Status> {
        pass!(self, GetConsistencyProof, get_consistency_proof, request)
    }

    async fn get_signed_head(
        &self,
        request: Request<pb::SignedHeadRequest>,
    ) -> Result<Response<pb::SignedHeadResponse>, Status> {
        pass!(self, GetSignedHead, get_signed_head, request)
    }
}
