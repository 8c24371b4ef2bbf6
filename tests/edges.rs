//! System tests of the servers' edges (issue 18, "connections are
//! bounded"): the real binaries on loopback, attacked over raw TCP the way
//! a client that holds nothing would — connections that never speak, or
//! speak a byte at a time, or come by the thousand — and through gRPC by
//! tenants that flood.
//!
//! Every timing assertion has a deadline; nothing sleeps to let a race
//! settle. A connection is "closed by the server" when a read returns end
//! of file or a reset while the test has not closed its side.

use std::time::{Duration, Instant};

use battlelog_auth::Role;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{GetBattleRequest, WatchRequest};
use battlelog_test_support::stack::*;
use battlelog_test_support::{ServiceProcess, StartOptions, TestAuth, authed_channel, closed_by_server, poll_until};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tonic_types::StatusExt;

/// The HTTP/2 client preface, which a gRPC client sends first.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame: what a client sends right after the preface.
const EMPTY_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

fn envs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// A web in front of `stack` with `envs` (its `BATTLELOG_WEB_*` keys).
async fn web(stack: &Stack, envs: &[(String, String)]) -> ServiceProcess {
    let secret = stack.dir.path().join("share.secret");
    battlelog_auth::ShareSecret::read_or_create(&secret).expect("a share secret");
    let token_file = stack.dir.path().join("web.token");
    std::fs::write(&token_file, TestAuth::shared().reader()).expect("the web's token");
    let log = stack.dir.path().join("web.log");
    battlelog_test_support::web_with(&stack.resolver.url(), &secret, &token_file, &log, envs).await
}

/// A connection that sends `bytes` one every `pace` (a slowloris); the
/// writer stops when the server has closed the connection.
async fn slowloris(
    addr: std::net::SocketAddr,
    bytes: Vec<u8>,
    pace: Duration,
) -> (tokio::net::tcp::OwnedReadHalf, Instant) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let opened = Instant::now();
    let (read, mut write) = stream.into_split();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(pace);
        for byte in bytes {
            ticks.tick().await;
            if write.write_all(&[byte]).await.is_err() {
                return;
            }
        }
        // Hold the write side open, silent, until the server closes.
        std::future::pending::<()>().await;
        drop(write);
    });
    (read, opened)
}

/// A connection that sends `bytes` at once, then nothing. Keep the write
/// half: dropping it would half-close the connection, which is not silence.
async fn silent_after(
    addr: std::net::SocketAddr,
    bytes: &[u8],
) -> (tokio::net::tcp::OwnedReadHalf, tokio::net::tcp::OwnedWriteHalf, Instant) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let opened = Instant::now();
    stream.write_all(bytes).await.expect("write");
    let (read, write) = stream.into_split();
    (read, write, opened)
}

/// Closed within `timeout` and a margin, and not much before `timeout`
/// (which would mean something else closed it).
fn assert_closed_at_timeout(what: &str, closed: Option<Duration>, timeout: Duration) {
    let closed = closed.unwrap_or_else(|| panic!("{what}: still open {:?} after the timeout", timeout * 5));
    assert!(closed >= timeout.mul_f64(0.9), "{what}: closed after {closed:?}, before its timeout of {timeout:?}");
    assert!(closed <= timeout + Duration::from_secs(3), "{what}: closed only after {closed:?} (timeout {timeout:?})");
}

/// gRPC: a connection that sends nothing, one that sends the HTTP/2
/// preface a byte at a time, and one that sends the preface and then
/// nothing are all closed at `first_request_timeout_ms`; a connection past
/// its preface that stops answering the server's PINGs is closed at the
/// keepalive interval + timeout, long before its first-request deadline.
/// A real client is served before, during and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn silent_and_slow_grpc_connections_are_closed_within_their_timeouts() {
    let options = StartOptions {
        envs: envs(&[
            ("BATTLELOG_RESOLVER_FIRST_REQUEST_TIMEOUT_MS", "1500"),
            // The roller: a long first-request deadline and a short
            // keepalive, so that the keepalive is what closes.
            ("BATTLELOG_ROLLER_FIRST_REQUEST_TIMEOUT_MS", "60000"),
            ("BATTLELOG_ROLLER_KEEPALIVE_INTERVAL_MS", "500"),
            ("BATTLELOG_ROLLER_KEEPALIVE_TIMEOUT_MS", "500"),
        ]),
        ..StartOptions::default()
    };
    let stack = Stack::start_with("edges-grpc-timeouts", false, &options).await;
    let first_request = Duration::from_millis(1500);
    let resolver = stack.resolver.addr();

    // A real client with a stream open on a connection of its own: past
    // its first request, its connection outlives the deadline.
    let mut forum = resolver_client(&stack.resolver).await;
    let fighters = serde_json::json!([{"id": "pikachu"}, {"id": "meowth"}]);
    open(&mut forum, "edges-watch", "pokemon-d6@2", fighters, "edges seed").await;
    let mut watcher = resolver_client(&stack.resolver).await;
    let watch = WatchRequest { battle_id: "edges-watch".into(), from_version: 0 };
    let mut watch = watcher.watch(watch).await.expect("watch").into_inner();
    let opened = tokio::time::timeout(WAIT, watch.message()).await.expect("the opening event");
    assert!(opened.expect("a healthy stream").is_some(), "the battle's first event");

    let (mut idle, _idle_write, idle_opened) = silent_after(resolver, b"").await;
    let (mut preface_only, _write, preface_opened) = silent_after(resolver, &[PREFACE, EMPTY_SETTINGS].concat()).await;
    // 24 + 9 bytes at 100 ms each: 3.3 s, past the deadline.
    let (mut slow, slow_opened) =
        slowloris(resolver, [PREFACE, EMPTY_SETTINGS].concat(), Duration::from_millis(100)).await;

    // A real client meanwhile is served.
    let mut health = HealthClient::new(stack.resolver.channel().await);
    health.check(HealthCheckRequest::default()).await.expect("a real client is served");

    let (idle_closed, preface_closed, slow_closed) = tokio::join!(
        closed_by_server(&mut idle, idle_opened, first_request * 5),
        closed_by_server(&mut preface_only, preface_opened, first_request * 5),
        closed_by_server(&mut slow, slow_opened, first_request * 5),
    );
    assert_closed_at_timeout("a connection that never speaks", idle_closed, first_request);
    assert_closed_at_timeout("a connection that stops after the preface", preface_closed, first_request);
    assert_closed_at_timeout("a preface sent a byte every 100 ms", slow_closed, first_request);

    // The clients that made an authenticated request are past the
    // deadline, and kept: the watch, open all along on its connection,
    // still receives. (A health check needs no token, so it does not lift
    // the deadline: tests/fair_shares.rs.)
    let roll = serde_json::json!({"type": "roll", "actor": "ash", "expression": "1d6", "purpose": "edges"});
    act(&mut forum, "edges-watch", &roll, "edges-1").await.expect("a roll");
    let next = tokio::time::timeout(WAIT, watch.message()).await.expect("the next event");
    assert!(next.expect("the watch's connection is still open").is_some(), "a live event");

    // Keepalive: past the preface, a peer that never answers a PING.
    let roller = stack.roller.addr();
    let (mut mute, _write, mute_opened) = silent_after(roller, &[PREFACE, EMPTY_SETTINGS].concat()).await;
    let closed = closed_by_server(&mut mute, mute_opened, Duration::from_secs(10)).await;
    let closed = closed.expect("a peer that does not answer PINGs is closed");
    assert!(
        closed >= Duration::from_millis(900) && closed <= Duration::from_secs(5),
        "closed after {closed:?}: keepalive interval 500 ms + timeout 500 ms"
    );
}

/// The web: a connection that sends nothing, a request head sent a byte at
/// a time, and a kept-alive connection idle after its first response are
/// each closed at `header_read_timeout_ms`; a request that is slow to be
/// answered (none here is) would be cut at `request_timeout_ms`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn silent_and_slow_web_connections_are_closed_within_the_header_read_timeout() {
    let stack = Stack::start("edges-web-timeouts", false).await;
    let web = web(&stack, &envs(&[("BATTLELOG_WEB_HEADER_READ_TIMEOUT_MS", "1500")])).await;
    let timeout = Duration::from_millis(1500);
    let addr = web.addr();

    let (mut idle, _idle_write, idle_opened) = silent_after(addr, b"").await;
    let head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Pad: aaaaaaaaaaaaaaaaaaaa\r\n\r\n".to_vec();
    // 70 bytes at 50 ms: 3.5 s, past the timeout.
    let (mut slow, slow_opened) = slowloris(addr, head, Duration::from_millis(50)).await;
    // One whole request, its response, then silence on the kept-alive connection.
    let mut kept = TcpStream::connect(addr).await.expect("connect");
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").await.expect("write");
    let mut response = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&response).contains("ok\n") {
        let n = tokio::time::timeout(WAIT, kept.read(&mut buf)).await.expect("a response").expect("read");
        assert!(n > 0, "the server closed before answering: {}", String::from_utf8_lossy(&response));
        response.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&response).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&response));
    let answered = Instant::now();
    let (mut kept, _kept_write) = kept.into_split();

    let (status, _) = battlelog_test_support::http_get(&format!("{}/healthz", web.url()), &[]).await;
    assert_eq!(status, 200, "a real client is served meanwhile");

    let (idle_closed, slow_closed, kept_closed) = tokio::join!(
        closed_by_server(&mut idle, idle_opened, timeout * 5),
        closed_by_server(&mut slow, slow_opened, timeout * 5),
        closed_by_server(&mut kept, answered, timeout * 5),
    );
    assert_closed_at_timeout("a web connection that never speaks", idle_closed, timeout);
    assert_closed_at_timeout("a request head sent a byte every 50 ms", slow_closed, timeout);
    assert_closed_at_timeout("a kept-alive connection, idle after its response", kept_closed, timeout);
}

/// 2 000 connections that never speak, 500 on each port of `battlelog up`
/// (resolver, roller, journal, web: four servers in one process), started
/// with a soft file limit of 1 024 as on most systems, which 2 000
/// connections do not fit in: all are held at once — the process raises its
/// own file limit, and each server's `max_connections` (1 000 by default) is
/// what bounds them — and new clients of every port are served meanwhile.
/// They come from five loopback addresses, 100 each per port: one address's
/// share (`max_connections_per_address`, 100 by default; tests/fair_shares.rs
/// floods from one).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_thousand_idle_connections_do_not_stop_the_stack_serving() {
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).expect("the file limit");
    assert!(hard >= 2_200, "this test needs a hard file limit of 2 200 at least; it is {hard}");
    // `battlelog up` inherits this process's soft limit.
    rlimit::setrlimit(rlimit::Resource::NOFILE, 1_024, hard).expect("lower the soft file limit");
    let dir = battlelog_test_support::temp_dir("edges-two-thousand");
    let up = up(dir.path(), &["--no-nats"]);
    // This process holds the 2 000.
    rlimit::increase_nofile_limit(u64::MAX).expect("raise the file limit again");

    let addr = |name: &str| -> std::net::SocketAddr {
        let url = up.endpoint(name);
        url.trim_start_matches("http://").parse().unwrap_or_else(|e| panic!("{name} at {url}: {e}"))
    };
    let ports = [addr("resolver"), addr("roller"), addr("journal"), addr("web")];
    let mut held = Vec::new();
    for port in ports {
        for n in 0..500 {
            let from = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 10 + (n / 100) as u8));
            let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
            socket.bind(std::net::SocketAddr::new(from, 0)).expect("bind a loopback address");
            // A process that stopped accepting fills its backlog, and then
            // connections time out.
            let connected = tokio::time::timeout(WAIT, socket.connect(port)).await;
            let stream = connected.unwrap_or_else(|_| panic!("connection {n} to {port} not accepted in {WAIT:?}"));
            held.push(stream.expect("connect"));
        }
    }

    // The 2 000 are held, not refused: none has been closed (a gRPC server
    // sends its HTTP/2 SETTINGS first: read past them). They have 10 s
    // (the default first-request and header-read timeouts) before the
    // servers close them.
    let mut buf = [0u8; 1024];
    for (i, stream) in held.iter().enumerate() {
        loop {
            match stream.try_read(&mut buf) {
                Ok(0) => panic!("connection {i} was closed by the server"),
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("connection {i}: {e}"),
            }
        }
    }

    // New clients of every port, while they are held (a process out of
    // file descriptors leaves them in its backlog: hence the deadline).
    let key = battlelog_auth::SigningKey::read(&dir.path().join("auth").join("signing-key.pem")).expect("up's key");
    let token = key.issue("edges-test", "dev", Role::Forum, Duration::from_secs(600)).expect("a token");
    let served = tokio::time::timeout(WAIT, async {
        let mut forum = ResolverClient::new(authed_channel(&up.resolver, &token));
        let status = forum
            .get_battle(GetBattleRequest { battle_id: "no-such-battle".into(), ..Default::default() })
            .await
            .expect_err("no such battle");
        assert_eq!(status.code(), Code::NotFound, "the resolver (and the journal behind it) serve: {status:?}");
        for name in ["roller", "journal"] {
            let channel = tonic::transport::Endpoint::from_shared(up.endpoint(name)).expect("url").connect_lazy();
            HealthClient::new(channel).check(HealthCheckRequest::default()).await.expect("served");
        }
        let (status, _) = battlelog_test_support::http_get(&format!("{}/healthz", up.endpoint("web")), &[]).await;
        assert_eq!(status, 200, "the web serves");
    })
    .await;
    assert!(served.is_ok(), "new clients were not served while 2 000 connections were held");
}

/// `max_connections` = 20 on the resolver and 5 on the web: the
/// connection past the limit is closed at once (long before any timeout),
/// the ones within it are served, and a slot freed is a slot taken again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_connection_past_the_limit_is_closed_at_once() {
    let options = StartOptions {
        envs: envs(&[
            ("BATTLELOG_RESOLVER_MAX_CONNECTIONS", "20"),
            ("BATTLELOG_RESOLVER_FIRST_REQUEST_TIMEOUT_MS", "60000"),
        ]),
        ..StartOptions::default()
    };
    let stack = Stack::start_with("edges-connection-limit", false, &options).await;
    let resolver = stack.resolver.addr();

    // 19 silent connections and one real client: the limit, just reached.
    let mut silent = Vec::new();
    for _ in 0..19 {
        silent.push(TcpStream::connect(resolver).await.expect("connect"));
    }
    // The 20th: polled, for the connection of the start-up health check
    // may not be released yet.
    let mut health = poll_until("the 20th connection served", WAIT, || async {
        let channel = tonic::transport::Endpoint::from_shared(stack.resolver.url()).ok()?.connect().await.ok()?;
        let mut health = HealthClient::new(channel);
        health.check(HealthCheckRequest::default()).await.ok()?;
        Some(health)
    })
    .await;
    // One past it.
    let (mut past, _write, opened) = silent_after(resolver, b"").await;
    let closed = closed_by_server(&mut past, opened, Duration::from_secs(10)).await;
    let closed = closed.expect("the 21st connection is closed");
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}: at once, not at a timeout");
    health.check(HealthCheckRequest::default()).await.expect("the connections within the limit are still served");

    // Freed slots are taken again.
    drop(silent);
    poll_until("a new client once the silent connections are gone", WAIT, || async {
        let channel = tonic::transport::Endpoint::from_shared(stack.resolver.url()).ok()?.connect().await.ok()?;
        HealthClient::new(channel).check(HealthCheckRequest::default()).await.ok()
    })
    .await;

    // The web: 5 held, the 6th closed at once.
    let web = web(
        &stack,
        &envs(&[("BATTLELOG_WEB_MAX_CONNECTIONS", "5"), ("BATTLELOG_WEB_HEADER_READ_TIMEOUT_MS", "60000")]),
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(TcpStream::connect(web.addr()).await.expect("connect"));
    }
    // The 5th was accepted: it is answered.
    let fifth = held.last_mut().expect("five");
    fifth.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").await.expect("write");
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(WAIT, fifth.read(&mut buf)).await.expect("an answer").expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&buf[..n]));
    let (mut past, _write, opened) = silent_after(web.addr(), b"").await;
    let closed = closed_by_server(&mut past, opened, Duration::from_secs(10)).await;
    let closed = closed.expect("the 6th web connection is closed");
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}: at once, not at a timeout");
    drop(held);
    poll_until("the web serving again once the held connections are gone", WAIT, || async {
        let mut stream = TcpStream::connect(web.addr()).await.ok()?;
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.ok()?;
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut answer)).await.ok()?.ok()?;
        String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200").then_some(())
    })
    .await;
}

/// A tenant past its burst is refused with `RESOURCE_EXHAUSTED`, reason
/// `RATE_LIMITED` and a `RetryInfo`, while another tenant, and the
/// `service` role, are served; once the delay has passed it is served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_past_its_burst_is_refused_with_a_retry_delay_and_another_is_served() {
    let options = StartOptions {
        envs: envs(&[("BATTLELOG_RESOLVER_RATE_LIMIT_PER_SEC", "2"), ("BATTLELOG_RESOLVER_RATE_LIMIT_BURST", "5")]),
        ..StartOptions::default()
    };
    let stack = Stack::start_with("edges-rate-limit", false, &options).await;
    let auth = TestAuth::shared();
    let client = |token: String| ResolverClient::new(authed_channel(&stack.resolver.url(), &token));
    let mut tenant_a = client(auth.token(Role::Forum, "tenant-a", "forum-a"));
    let mut tenant_b = client(auth.token(Role::Forum, "tenant-b", "forum-b"));
    let mut service = client(auth.service_token());
    let get = |n: usize| GetBattleRequest { battle_id: format!("no-such-{n}"), ..Default::default() };

    // Tenant A, as fast as it can: its burst of 5 is served (answered
    // NOT_FOUND by the handler), then refusals. Refilled at 2 per second,
    // a few more may pass while the 30 calls run.
    let started = Instant::now();
    let mut served = 0;
    let mut first_refusal = None;
    for n in 0..30 {
        let status = tenant_a.get_battle(get(n)).await.expect_err("no such battle");
        match status.code() {
            Code::NotFound => served += 1,
            Code::ResourceExhausted => {
                first_refusal.get_or_insert(status);
            }
            other => panic!("unexpected {other:?}: {status:?}"),
        }
    }
    let refill = (started.elapsed().as_secs_f64() * 2.0).ceil() as usize;
    assert!((5..=5 + refill).contains(&served), "{served} served: the burst of 5, + {refill} refilled at most");
    let refusal = first_refusal.expect("tenant A refused past its burst");
    assert!(refusal.message().contains("tenant-a") && refusal.message().contains("rate limit"), "{refusal:?}");
    let details = refusal.get_error_details();
    assert_eq!(details.error_info().expect("an ErrorInfo").reason, "RATE_LIMITED");
    let delay = details.retry_info().and_then(|r| r.retry_delay).expect("a RetryInfo delay");
    assert!(
        delay > Duration::ZERO && delay <= Duration::from_millis(500),
        "2 per second: at most 500 ms, got {delay:?}"
    );

    // Tenant B and the service role meanwhile.
    for n in 0..5 {
        let status = tenant_b.get_battle(get(n)).await.expect_err("no such battle");
        assert_eq!(status.code(), Code::NotFound, "tenant B is served: {status:?}");
    }
    for n in 0..20 {
        let status = service.get_battle(get(n)).await.expect_err("not for the service role");
        assert_ne!(status.code(), Code::ResourceExhausted, "the service role is not rate limited: {status:?}");
    }

    // After the delay, tenant A is served again.
    poll_until("tenant A served again after its retry delay", WAIT, || {
        let mut tenant_a = tenant_a.clone();
        async move { (tenant_a.get_battle(get(99)).await.expect_err("none").code() == Code::NotFound).then_some(()) }
    })
    .await;
}

/// `max_concurrent_requests` = 2 on the resolver: with its journal stopped
/// (SIGSTOP), two reads wait inside the resolver and the third is shed at
/// once with `RESOURCE_EXHAUSTED` (reason `OVERLOADED`); once the journal
/// runs again, the two finish and the next request is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_past_the_concurrency_limit_are_shed_at_once() {
    let options =
        StartOptions { envs: envs(&[("BATTLELOG_RESOLVER_MAX_CONCURRENT_REQUESTS", "2")]), ..StartOptions::default() };
    let stack = Stack::start_with("edges-concurrency", false, &options).await;
    let mut forum = resolver_client(&stack.resolver).await;
    // The resolver's connection to the journal is made (and past its first
    // request) before the journal stops.
    let status = forum.get_battle(GetBattleRequest { battle_id: "warm".into(), ..Default::default() }).await;
    assert_eq!(status.expect_err("no such battle").code(), Code::NotFound);

    // Frozen means every thread stopped, not just SIGSTOP sent: until then
    // the journal may still answer a read, which would free its slot.
    stack.journal.freeze().await;
    let waiting: Vec<_> = (0..2)
        .map(|n| {
            let mut forum = forum.clone();
            tokio::spawn(async move {
                // Shed while a probe below holds a slot: then again, until in.
                loop {
                    let request = GetBattleRequest { battle_id: format!("waits-{n}"), ..Default::default() };
                    match forum.get_battle(request).await {
                        Err(status) if status.code() == Code::ResourceExhausted => continue,
                        other => return other,
                    }
                }
            })
        })
        .collect();
    // The third is shed once the two are in: poll until it is. A probe
    // that comes first holds a slot for 300 ms at most (its deadline).
    let shed = poll_until("a request shed past the limit of 2", WAIT, || {
        let mut forum = forum.clone();
        async move {
            let request = GetBattleRequest { battle_id: "third".into(), ..Default::default() };
            let started = Instant::now();
            let mut request = tonic::Request::new(request);
            request.set_timeout(Duration::from_millis(300));
            match forum.get_battle(request).await {
                Err(status) if status.code() == Code::ResourceExhausted => Some((status, started.elapsed())),
                _ => None,
            }
        }
    })
    .await;
    assert!(waiting.iter().all(|task| !task.is_finished()), "the two within the limit wait for the journal");
    stack.journal.thaw();
    let (status, took) = shed;
    assert!(took < Duration::from_millis(300), "shed at once, not queued: {took:?}");
    assert!(status.message().contains("max_concurrent_requests"), "{status:?}");
    assert_eq!(status.get_error_details().error_info().expect("an ErrorInfo").reason, "OVERLOADED");
    for task in waiting {
        let status = task.await.expect("join").expect_err("no such battle");
        assert_eq!(status.code(), Code::NotFound, "the two within the limit finish once the journal runs: {status:?}");
    }
    let status = forum.get_battle(GetBattleRequest { battle_id: "after".into(), ..Default::default() }).await;
    assert_eq!(status.expect_err("no such battle").code(), Code::NotFound, "served again");
}
