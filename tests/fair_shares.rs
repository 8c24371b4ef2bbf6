//! System tests of the fair shares of issue 35: no one peer — a client
//! address, a token, a tenant, a share link — takes a pool the others
//! need. The real binaries on loopback; "another address" is another
//! address of 127.0.0.0/8 (all of it is loopback on Linux) that a client
//! binds its socket to before it connects.
//!
//! - the servers' edges: connections per client address until the first
//!   authenticated request, which alone lifts the first-request deadline
//!   (finding 2);
//! - the webhooks: a tenant whose endpoint hangs holds its own share of
//!   the delivery slots and no more (finding 3);
//! - the web's live streams: per share link and per tenant, spread over a
//!   pool of resolver connections, 503 with `Retry-After` when full
//!   (finding 4).
//!
//! Every wait has a deadline; nothing sleeps to let a race settle.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use battlelog_auth::{Role, ShareSecret};
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_test_support::journal_client::{append, client, no_stream, opened};
use battlelog_test_support::stack::*;
use battlelog_test_support::{
    NatsServer, ServiceProcess, StartOptions, TestAuth, poll_until, service_binary, temp_dir,
};
use http_body_util::BodyExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tonic::Code;

/// The flood's address, and the address of the forum that must still be
/// served.
const FLOOD: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
const NEIGHBOUR: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

fn envs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// A TCP connection to `addr` from the loopback address `local`.
async fn connect_from(local: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(local, 0))?;
    socket.connect(addr).await
}

/// How long until the server closes `stream` (a read gives end of file or
/// a reset), or `None` if it is still open after `deadline`.
async fn closed_within(stream: &mut TcpStream, deadline: Duration) -> Option<Duration> {
    battlelog_test_support::closed_by_server(stream, Instant::now(), deadline).await
}

/// A resolver client of `token` whose connection comes from `local`.
async fn resolver_from(
    local: IpAddr,
    process: &ServiceProcess,
    token: &str,
) -> Result<ResolverClient<battlelog_auth::AuthChannel>, tonic::transport::Error> {
    let channel = tonic::transport::Endpoint::from_shared(process.url())
        .expect("url")
        .local_address(Some(local))
        .connect()
        .await?;
    Ok(ResolverClient::new(battlelog_auth::authed(channel, token).expect("an ASCII token")))
}

fn roll(purpose: &str) -> serde_json::Value {
    json!({"type": "roll", "actor": "ash", "expression": "1d6", "purpose": purpose})
}

/// Finding 2: a thousand connections from one address, each with one call
/// carrying no token (refused `UNAUTHENTICATED`), held open; then a forum
/// connecting from another address acts at once. Before the shares, the
/// thousand held every one of the resolver's `max_connections` (the
/// refused call lifted their first-request deadline) and the forum got
/// `UNAVAILABLE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_tokenless_connections_from_one_address_do_not_stop_another_address_acting() {
    rlimit::increase_nofile_limit(u64::MAX).expect("raise the file limit");
    let options = StartOptions {
        // Long enough that nothing the flood holds is closed by its deadline
        // during the test: the share alone must leave the forum its slot.
        envs: envs(&[("BATTLELOG_RESOLVER_FIRST_REQUEST_TIMEOUT_MS", "300000")]),
        ..StartOptions::default()
    };
    let stack = Stack::start_with("fair-grpc-flood", false, &options).await;
    let mut setup = resolver_client(&stack.resolver).await;
    open(&mut setup, "fair-flood", "pokemon-d6@2", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    drop(setup);

    // The flood: 1 000 connections from one address, 50 at a time, each
    // making one call without a token; every connection is kept.
    let mut held = Vec::new();
    let (mut unauthenticated, mut refused) = (0usize, 0usize);
    for _ in 0..20 {
        let mut batch = tokio::task::JoinSet::new();
        for _ in 0..50 {
            let url = stack.resolver.url();
            batch.spawn(async move {
                let attempt = async {
                    let endpoint = tonic::transport::Endpoint::from_shared(url).expect("url");
                    let channel = endpoint.local_address(Some(FLOOD)).connect().await;
                    let Ok(channel) = channel else { return (None, None) };
                    let request = pb::GetBattleRequest { battle_id: "fair-flood".into(), ..Default::default() };
                    let code = ResolverClient::new(channel.clone()).get_battle(request).await.err().map(|s| s.code());
                    (Some(channel), code)
                };
                // A client may be left waiting on a connection the server
                // closed at once (tonic does not always notice): such a
                // call counts as refused.
                tokio::time::timeout(Duration::from_secs(5), attempt).await.unwrap_or((None, None))
            });
        }
        while let Some(joined) = batch.join_next().await {
            let (channel, code) = joined.expect("a flood task");
            match code {
                Some(Code::Unauthenticated) => unauthenticated += 1,
                _ => refused += 1,
            }
            held.extend(channel);
        }
    }
    // The flood's address got its share (100 by default) and no more.
    assert_eq!(unauthenticated, 100, "calls answered on the flood's connections ({refused} refused)");

    // A forum from another address: a new connection, and an Act.
    let started = Instant::now();
    let acted = tokio::time::timeout(WAIT, async {
        let mut forum = resolver_from(NEIGHBOUR, &stack.resolver, &TestAuth::shared().forum())
            .await
            .expect("the forum's connection is accepted during the flood");
        act(&mut forum, "fair-flood", &roll("during the flood"), "fair-flood-1").await
    })
    .await
    .expect("the forum is answered during the flood");
    let took = started.elapsed();
    acted.expect("the forum acts during the flood");
    assert!(took < Duration::from_secs(5), "the forum's Act took {took:?} during the flood");
    drop(held);
}

/// `max_connections_per_address` at its edge, on the resolver and the
/// web: from one address, connections up to the share are held and
/// served, the one past it is closed at once; another address is served
/// meanwhile though the first holds more than is left of
/// `max_connections` without the share.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_connection_past_its_addresss_share_is_closed_at_once_and_another_address_is_served() {
    let options = StartOptions {
        envs: envs(&[
            ("BATTLELOG_RESOLVER_MAX_CONNECTIONS", "8"),
            ("BATTLELOG_RESOLVER_MAX_CONNECTIONS_PER_ADDRESS", "5"),
            ("BATTLELOG_RESOLVER_FIRST_REQUEST_TIMEOUT_MS", "60000"),
        ]),
        ..StartOptions::default()
    };
    let stack = Stack::start_with("fair-address-share", false, &options).await;
    let mut setup = resolver_client(&stack.resolver).await;
    open(&mut setup, "fair-share", "pokemon-d6@2", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    drop(setup);

    // Under and at the share: 5 silent connections, none closed.
    let mut silent = Vec::new();
    for _ in 0..5 {
        silent.push(connect_from(FLOOD, stack.resolver.addr()).await.expect("connect"));
    }
    // Over it: the 6th, 7th and 8th (within max_connections) closed at once.
    for n in 6..=8 {
        let mut past = connect_from(FLOOD, stack.resolver.addr()).await.expect("connect");
        let closed = closed_within(&mut past, Duration::from_secs(10)).await;
        let closed = closed.unwrap_or_else(|| panic!("connection {n} of one address is closed"));
        assert!(closed < Duration::from_secs(3), "connection {n} closed after {closed:?}: at once, not at a timeout");
    }
    for (n, stream) in silent.iter_mut().enumerate() {
        assert_eq!(closed_within(stream, Duration::from_millis(200)).await, None, "connection {} is held", n + 1);
    }
    // Another address is served.
    let mut forum = resolver_from(NEIGHBOUR, &stack.resolver, &TestAuth::shared().forum()).await.expect("connect");
    act(&mut forum, "fair-share", &roll("another address"), "fair-share-1").await.expect("served");

    // The web: max_connections 8, 5 per address.
    let secret = stack.dir.path().join("share.secret");
    ShareSecret::read_or_create(&secret).expect("a share secret");
    let token_file = stack.dir.path().join("web.token");
    std::fs::write(&token_file, TestAuth::shared().reader()).expect("the web's token");
    let web_envs = envs(&[
        ("BATTLELOG_WEB_MAX_CONNECTIONS", "8"),
        ("BATTLELOG_WEB_MAX_CONNECTIONS_PER_ADDRESS", "5"),
        ("BATTLELOG_WEB_HEADER_READ_TIMEOUT_MS", "60000"),
    ]);
    let log = stack.dir.path().join("web.log");
    let web = battlelog_test_support::web_with(&stack.resolver.url(), &secret, &token_file, &log, &web_envs).await;
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(connect_from(FLOOD, web.addr()).await.expect("connect"));
    }
    // The 5th, at the share, is answered (kept alive).
    let fifth = held.last_mut().expect("five");
    fifth.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").await.expect("write");
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(WAIT, fifth.read(&mut buf)).await.expect("an answer").expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&buf[..n]));
    for n in 6..=8 {
        let mut past = connect_from(FLOOD, web.addr()).await.expect("connect");
        let closed = closed_within(&mut past, Duration::from_secs(10)).await;
        let closed = closed.unwrap_or_else(|| panic!("web connection {n} of one address is closed"));
        assert!(closed < Duration::from_secs(3), "web connection {n} closed after {closed:?}");
    }
    let mut visitor = connect_from(NEIGHBOUR, web.addr()).await.expect("connect");
    visitor.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, visitor.read_to_end(&mut answer)).await.expect("an answer").expect("read");
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
}

/// One gRPC call over a fresh HTTP/2 connection of its own (hyper's
/// client, so that the test sees when the server closes it): `GetBattle`
/// of a battle that does not exist, with `token` if any. Returns the
/// call's `grpc-status` and a task that ends when the connection does.
async fn raw_get_battle(addr: SocketAddr, token: Option<&str>) -> (String, tokio::task::JoinHandle<()>) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .expect("an HTTP/2 handshake");
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    // A gRPC message: no compression flag, its length, the request.
    let message = prost::Message::encode_to_vec(&pb::GetBattleRequest {
        battle_id: "no-such-battle".into(),
        ..Default::default()
    });
    let mut framed = vec![0u8];
    framed.extend_from_slice(&u32::try_from(message.len()).expect("a short message").to_be_bytes());
    framed.extend_from_slice(&message);
    let body = http_body_util::Full::new(hyper::body::Bytes::from(framed));
    let mut request = hyper::Request::post(format!("http://{addr}/battlelog.v1.Resolver/GetBattle"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = sender.send_request(request.body(body).expect("a request")).await.expect("a response");
    let in_head = response.headers().get("grpc-status").map(|v| v.to_str().unwrap_or_default().to_owned());
    let collected = response.into_body().collect().await.expect("the body");
    let status = in_head
        .or_else(|| collected.trailers()?.get("grpc-status").map(|v| v.to_str().unwrap_or_default().to_owned()))
        .expect("a grpc-status");
    // The sender is dropped, but the connection is not closed by it: hyper
    // keeps an HTTP/2 connection while its task runs.
    std::mem::forget(sender);
    (status, connection)
}

/// The first-request deadline is lifted by an authenticated request only:
/// a connection whose one call was refused `UNAUTHENTICATED` is closed at
/// `first_request_timeout_ms`, as if it had said nothing; a connection
/// whose call carried a valid token is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_an_authenticated_request_lifts_the_first_request_deadline() {
    let timeout = Duration::from_millis(1500);
    let options = StartOptions {
        envs: envs(&[("BATTLELOG_RESOLVER_FIRST_REQUEST_TIMEOUT_MS", "1500")]),
        ..StartOptions::default()
    };
    let stack = Stack::start_with("fair-first-request", false, &options).await;
    let addr = stack.resolver.addr();
    let opened = Instant::now();
    let (refused, refused_connection) = raw_get_battle(addr, None).await;
    assert_eq!(refused, (Code::Unauthenticated as i32).to_string(), "no token");
    let (answered, answered_connection) = raw_get_battle(addr, Some(&TestAuth::shared().forum())).await;
    assert_eq!(answered, (Code::NotFound as i32).to_string(), "a valid token, a battle that does not exist");

    tokio::time::timeout(timeout * 5, refused_connection).await.expect("the unauthenticated connection is closed").ok();
    let closed = opened.elapsed();
    assert!(closed >= timeout.mul_f64(0.9), "closed after {closed:?}, before its deadline of {timeout:?}");
    assert!(!answered_connection.is_finished(), "the authenticated connection is kept past the deadline");
    let still = tokio::time::timeout(timeout * 2, answered_connection).await;
    assert!(still.is_err(), "the authenticated connection is kept at twice the deadline");
}

/// The time each battle's first delivery reached a receiver.
type Arrivals = Arc<Mutex<Vec<(String, Instant)>>>;

/// A receiver that answers 204 at once and notes each battle's arrival.
async fn prompt_receiver() -> (SocketAddr, Arrivals) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let arrivals: Arrivals = Arc::default();
    let noted = arrivals.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let noted = noted.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let noted = noted.clone();
                    async move {
                        let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                        let battle = json["data"]["battle_id"].as_str().unwrap_or_default().to_owned();
                        noted.lock().unwrap().push((battle, Instant::now()));
                        Ok::<_, std::convert::Infallible>(
                            hyper::Response::builder()
                                .status(204)
                                .body(http_body_util::Empty::<hyper::body::Bytes>::new())
                                .expect("a response"),
                        )
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
            });
        }
    });
    (addr, arrivals)
}

/// An endpoint that takes each request and never answers: counts the
/// connections that sent one.
async fn hanging_receiver() -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let hanging = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hanging.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { continue };
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                if matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                // Read on, never answer, until the client gives up.
                while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    (addr, hanging)
}

/// Finding 3: a tenant whose endpoint hangs, with more battles than there
/// are delivery slots, does not hold back another tenant's deliveries:
/// they arrive at once, while the hanging tenant holds its share of the
/// slots (`max_concurrent_deliveries_per_tenant`) and no more. Before the
/// per-tenant share, its battles held every slot until their POSTs timed
/// out, and the other tenant waited that long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_whose_endpoint_hangs_does_not_hold_back_another_tenants_deliveries() {
    let nats = NatsServer::start();
    let dir = temp_dir("fair-webhooks");
    let journal = battlelog_test_support::journal(&dir.path().join("journal"), Some(&nats.url())).await;
    let mut journal_client = client(&journal).await;
    let (hanging_addr, hanging) = hanging_receiver().await;
    let (prompt_addr, arrivals) = prompt_receiver().await;
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let data_dir = dir.path().join("webhooks");
    std::fs::create_dir_all(&data_dir).expect("data dir");
    let config = dir.path().join("webhooks.toml");
    std::fs::write(
        &config,
        format!(
            "[tenants.hangs]\nurl = \"http://{hanging_addr}/hook\"\nsecret = \"{secret}\"\n\
             [tenants.prompt]\nurl = \"http://{prompt_addr}/hook\"\nsecret = \"{secret}\"\n"
        ),
    )
    .expect("the config");
    let args: Vec<String> = ["--config", &config.display().to_string(), "--listen", "127.0.0.1:0"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut all = TestAuth::shared().env("webhooks");
    all.extend(envs(&[
        ("BATTLELOG_WEBHOOKS_NATS_URL", &nats.url()),
        ("BATTLELOG_WEBHOOKS_DATA_DIR", &data_dir.join("store").display().to_string()),
        // A POST to the hanging endpoint waits a minute: past the test.
        ("BATTLELOG_WEBHOOKS_REQUEST_TIMEOUT_MS", "60000"),
        ("BATTLELOG_WEBHOOKS_MAX_CONCURRENT_DELIVERIES", "4"),
        ("BATTLELOG_WEBHOOKS_MAX_CONCURRENT_DELIVERIES_PER_TENANT", "2"),
    ]));
    let binary = service_binary("battlelog-webhooks");
    let _service = ServiceProcess::start_http(&binary, &args, &all, &dir.path().join("webhooks.log")).await;

    // Eight battles of the hanging tenant: twice the shared slots.
    for n in 0..8 {
        let battle = format!("fair-hangs-{n}");
        append(&mut journal_client, &battle, no_stream(), vec![opened("hangs", &format!("{battle}-open"))])
            .await
            .expect("append");
    }
    poll_until("the hanging tenant's POSTs out", WAIT, || async {
        (hanging.load(std::sync::atomic::Ordering::SeqCst) >= 2).then_some(())
    })
    .await;

    let sent = Instant::now();
    for n in 0..3 {
        let battle = format!("fair-prompt-{n}");
        append(&mut journal_client, &battle, no_stream(), vec![opened("prompt", &format!("{battle}-open"))])
            .await
            .expect("append");
    }
    poll_until("the prompt tenant's three deliveries", WAIT, || async {
        (arrivals.lock().unwrap().len() >= 3).then_some(())
    })
    .await;
    let last = arrivals.lock().unwrap().iter().map(|(_, at)| *at).max().expect("three");
    let took = last.duration_since(sent);
    assert!(took < Duration::from_secs(10), "the prompt tenant's deliveries took {took:?} behind the hanging one");
    assert_eq!(
        hanging.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the hanging tenant holds its share of 2 POSTs, no more"
    );
}

/// An open `/live` stream: its status, its `Retry-After`, and its body
/// (kept so that the stream stays open).
struct LiveStream {
    status: u16,
    retry_after: Option<String>,
    _body: hyper::body::Incoming,
}

async fn live(url: &str, headers: &[(&str, &str)]) -> LiveStream {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<hyper::body::Bytes>>();
    let mut request = hyper::Request::get(url).header("accept", "text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response =
        client.request(request.body(http_body_util::Empty::new()).expect("a request")).await.expect("GET live");
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap_or_default().to_owned());
    LiveStream { status, retry_after, _body: response.into_body() }
}

/// Finding 4: the web's live streams. The resolver takes 2 `Watch`
/// streams per connection; the web has a pool of 3 connections to it,
/// takes 2 streams per share link and 3 per tenant. A share link's
/// streams past its share, and a tenant's past its share, get 503 with
/// `Retry-After`; another tenant's `/live` still works. Before, the web
/// had one connection, and the third stream of any tenant got 502.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn live_streams_past_a_share_link_or_tenants_share_get_503_and_another_tenant_still_streams() {
    let secret_dir = temp_dir("fair-live-secret");
    let secret = secret_dir.path().join("share.secret");
    let share = ShareSecret::read_or_create(&secret).expect("a share secret");
    let options = StartOptions {
        envs: envs(&[
            ("BATTLELOG_RESOLVER_MAX_WATCHES_PER_CONNECTION", "2"),
            ("BATTLELOG_RESOLVER_SHARE_SECRET_FILE", &secret.display().to_string()),
            ("BATTLELOG_RESOLVER_WEB_URL", "http://127.0.0.1:8080"),
        ]),
        ..StartOptions::default()
    };
    let stack = Stack::start_with("fair-live", false, &options).await;
    let auth = TestAuth::shared();
    let fighters = json!([{"id": "pikachu"}, {"id": "meowth"}]);
    let mut forum_a = resolver_client(&stack.resolver).await;
    open(&mut forum_a, "fair-a1", "pokemon-d6@2", fighters.clone(), "seed").await;
    open(&mut forum_a, "fair-a2", "pokemon-d6@2", fighters.clone(), "seed").await;
    let mut forum_b = resolver_as(&stack.resolver, &auth.token(Role::Forum, "tenant-b", "forum-b")).await;
    open(&mut forum_b, "fair-b1", "pokemon-d6@2", fighters, "seed").await;

    let token_file = stack.dir.path().join("web.token");
    std::fs::write(&token_file, auth.token(Role::Reader, "the-web", "web")).expect("the web's token");
    let web_envs = envs(&[
        ("BATTLELOG_WEB_RESOLVER_CONNECTIONS", "3"),
        ("BATTLELOG_WEB_LIVE_MAX_STREAMS_PER_SHARE_KEY", "2"),
        ("BATTLELOG_WEB_LIVE_MAX_STREAMS_PER_TENANT", "3"),
        ("BATTLELOG_WEB_LIVE_RETRY_AFTER_SECS", "7"),
    ]);
    let log = stack.dir.path().join("web.log");
    let web = battlelog_test_support::web_with(&stack.resolver.url(), &secret, &token_file, &log, &web_envs).await;
    let link = |battle: &str| format!("{}/battles/{battle}/live?after=0&k={}", web.url(), share.key_for(battle));

    // One share link: under and at its share, then over it.
    let a1_first = live(&link("fair-a1"), &[]).await;
    assert_eq!(a1_first.status, 200, "a share link's first stream");
    let a1_second = live(&link("fair-a1"), &[]).await;
    assert_eq!(a1_second.status, 200, "a share link's second stream, at its share");
    let over_link = live(&link("fair-a1"), &[]).await;
    assert_eq!(over_link.status, 503, "past the share link's share");
    assert_eq!(over_link.retry_after.as_deref(), Some("7"));

    // The tenant: its third stream (another link) at its share, the fourth over.
    let a2_first = live(&link("fair-a2"), &[]).await;
    assert_eq!(a2_first.status, 200, "the tenant's third stream, at its share");
    let over_tenant = live(&link("fair-a2"), &[]).await;
    assert_eq!(over_tenant.status, 503, "past the tenant's share");
    assert_eq!(over_tenant.retry_after.as_deref(), Some("7"));

    // Another tenant, by share link and by its own reader token: streams.
    let b_link = live(&link("fair-b1"), &[]).await;
    assert_eq!(b_link.status, 200, "another tenant's share link streams");
    let reader_b = format!("Bearer {}", auth.token(Role::Reader, "tenant-b", "reader-b"));
    let b_token = live(&format!("{}/battles/fair-b1/live?after=0", web.url()), &[("authorization", &reader_b)]).await;
    assert_eq!(b_token.status, 200, "another tenant's reader streams");

    // Five streams over the resolver's 2 per connection: the pool spread them.
    drop((a1_first, a1_second, a2_first, b_link, b_token));
}
