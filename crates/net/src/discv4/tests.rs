use super::enr::Enr;
use super::packet::{self, *};
use super::table::{self, Insert, Table};
use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s.split_whitespace().collect::<String>()).unwrap()
}

/// The key that signed the EIP-8 discovery test packets (and the ENR spec's record).
fn spec_key() -> SecretKey {
    SecretKey::from_byte_array(
        unhex("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291")
            .try_into()
            .unwrap(),
    )
    .unwrap()
}

fn ip6(s: &str) -> IpAddr {
    IpAddr::V6(s.parse::<Ipv6Addr>().unwrap())
}

// Test packets from EIP-8 ("RLPx Discovery Protocol"), signed with `spec_key`. Their
// expiration (0x43b9a355, in 2006) is long past: decoding does not check it.
const PING_V4: &str = "
e9614ccfd9fc3e74360018522d30e1419a143407ffcce748de3e22116b7e8dc92ff74788c0b6663a
aa3d67d641936511c8f8d6ad8698b820a7cf9e1be7155e9a241f556658c55428ec0563514365799a
4be2be5a685a80971ddcfa80cb422cdd0101ec04cb847f000001820cfa8215a8d790000000000000
000000000000000000018208ae820d058443b9a3550102";

const PING_V555: &str = "
577be4349c4dd26768081f58de4c6f375a7a22f3f7adda654d1428637412c3d7fe917cadc56d4e5e
7ffae1dbe3efffb9849feb71b262de37977e7c7a44e677295680e9e38ab26bee2fcbae207fba3ff3
d74069a50b902a82c9903ed37cc993c50001f83e82022bd79020010db83c4d001500000000abcdef
12820cfa8215a8d79020010db885a308d313198a2e037073488208ae82823a8443b9a355c5010203
040531b9019afde696e582a78fa8d95ea13ce3297d4afb8ba6433e4154caa5ac6431af1b80ba7602
3fa4090c408f6b4bc3701562c031041d4702971d102c9ab7fa5eed4cd6bab8f7af956f7d565ee191
7084a95398b6a21eac920fe3dd1345ec0a7ef39367ee69ddf092cbfe5b93e5e568ebc491983c09c7
6d922dc3";

const PONG_EXTRA: &str = "
09b2428d83348d27cdf7064ad9024f526cebc19e4958f0fdad87c15eb598dd61d08423e0bf66b206
9869e1724125f820d851c136684082774f870e614d95a2855d000f05d1648b2d5945470bc187c2d2
216fbe870f43ed0909009882e176a46b0102f846d79020010db885a308d313198a2e037073488208
ae82823aa0fbc914b16819237dcd8801d7e53f69e9719adecb3cc0e790c57e91ca4461c9548443b9
a355c6010203c2040506a0c969a58f6f9095004c0177a6b47f451530cab38966a25cca5cb58f0555
42124e";

const FINDNODE_EXTRA: &str = "
c7c44041b9f7c7e41934417ebac9a8e1a4c6298f74553f2fcfdcae6ed6fe53163eb3d2b52e39fe91
831b8a927bf4fc222c3902202027e5e9eb812195f95d20061ef5cd31d502e47ecb61183f74a504fe
04c51e73df81f25c4d506b26db4517490103f84eb840ca634cae0d49acb401d8a4c6b6fe8c55b70d
115bf400769cc1400f3258cd31387574077f301b421bc84df7266c44e9e6d569fc56be0081290476
7bf5ccd1fc7f8443b9a35582999983999999280dc62cc8255c73471e0a61da0c89acdc0e035e260a
dd7fc0c04ad9ebf3919644c91cb247affc82b69bd2ca235c71eab8e49737c937a2c396";

const NEIGHBORS_EXTRA: &str = "
c679fc8fe0b8b12f06577f2e802d34f6fa257e6137a995f6f4cbfc9ee50ed3710faf6e66f932c4c8
d81d64343f429651328758b47d3dbc02c4042f0fff6946a50f4a49037a72bb550f3a7872363a83e1
b9ee6469856c24eb4ef80b7535bcf99c0004f9015bf90150f84d846321163782115c82115db84031
55e1427f85f10a5c9a7755877748041af1bcd8d474ec065eb33df57a97babf54bfd2103575fa8291
15d224c523596b401065a97f74010610fce76382c0bf32f84984010203040101b840312c55512422
cf9b8a4097e9a6ad79402e87a15ae909a4bfefa22398f03d20951933beea1e4dfa6f968212385e82
9f04c2d314fc2d4e255e0d3bc08792b069dbf8599020010db83c4d001500000000abcdef12820d05
820d05b84038643200b172dcfef857492156971f0e6aa2c538d8b74010f8e140811d53b98c765dd2
d96126051913f44582e8c199ad7c6d6819e9a56483f637feaac9448aacf8599020010db885a308d3
13198a2e037073488203e78203e8b8408dcab8618c3253b558d459da53bd8fa68935a719aff8b811
197101a4b2b47dd2d47295286fc00cc081bb542d760717d1bdd6bec2c37cd72eca367d6dd3b9df73
8443b9a355010203b525a138aa34383fec3d2719a0";

const SPEC_EXPIRATION: u64 = 0x43b9a355;

#[test]
fn eip8_ping_packets() {
    let signer = NodeId::from_secret_key(&spec_key());

    let p = packet::decode(&unhex(PING_V4)).unwrap();
    assert_eq!(p.node_id, signer);
    let Message::Ping(ping) = &p.message else { panic!("not a ping: {:?}", p.message) };
    assert_eq!(ping.version, 4);
    assert_eq!(
        ping.from,
        Endpoint { ip: IpAddr::V4(Ipv4Addr::LOCALHOST), udp_port: 3322, tcp_port: 5544 }
    );
    assert_eq!(ping.to, Endpoint { ip: ip6("::1"), udp_port: 2222, tcp_port: 3333 });
    assert_eq!(ping.expiration, SPEC_EXPIRATION);
    // The extra elements (1, 2) are read as an enr-seq of 1 and otherwise ignored.
    assert_eq!(ping.enr_seq, Some(1));
    assert!(p.message.is_expired(unix_now()));
    assert!(!p.message.is_expired(SPEC_EXPIRATION));

    let p = packet::decode(&unhex(PING_V555)).unwrap();
    assert_eq!(p.node_id, signer);
    let Message::Ping(ping) = &p.message else { panic!("not a ping") };
    assert_eq!(ping.version, 555);
    assert_eq!(
        ping.from,
        Endpoint { ip: ip6("2001:db8:3c4d:15::abcd:ef12"), udp_port: 3322, tcp_port: 5544 }
    );
    assert_eq!(
        ping.to,
        Endpoint {
            ip: ip6("2001:db8:85a3:8d3:1319:8a2e:370:7348"),
            udp_port: 2222,
            tcp_port: 33338
        }
    );
    assert_eq!(ping.expiration, SPEC_EXPIRATION);
    // The fifth element is a list, not an enr-seq.
    assert_eq!(ping.enr_seq, None);
}

#[test]
fn eip8_pong_findnode_neighbors_packets() {
    let signer = NodeId::from_secret_key(&spec_key());

    let p = packet::decode(&unhex(PONG_EXTRA)).unwrap();
    assert_eq!(p.node_id, signer);
    let Message::Pong(pong) = &p.message else { panic!("not a pong") };
    assert_eq!(
        pong.to,
        Endpoint {
            ip: ip6("2001:db8:85a3:8d3:1319:8a2e:370:7348"),
            udp_port: 2222,
            tcp_port: 33338
        }
    );
    assert_eq!(
        pong.ping_hash,
        B256::from_slice(&unhex(
            "fbc914b16819237dcd8801d7e53f69e9719adecb3cc0e790c57e91ca4461c954"
        ))
    );
    assert_eq!(pong.expiration, SPEC_EXPIRATION);

    let p = packet::decode(&unhex(FINDNODE_EXTRA)).unwrap();
    assert_eq!(p.node_id, signer);
    let Message::FindNode(find) = &p.message else { panic!("not a findnode") };
    assert_eq!(
        find.target,
        B512::from_slice(&unhex(
            "ca634cae0d49acb401d8a4c6b6fe8c55b70d115bf400769cc1400f3258cd3138\
             7574077f301b421bc84df7266c44e9e6d569fc56be00812904767bf5ccd1fc7f"
        ))
    );
    assert_eq!(find.expiration, SPEC_EXPIRATION);

    let p = packet::decode(&unhex(NEIGHBORS_EXTRA)).unwrap();
    assert_eq!(p.node_id, signer);
    let Message::Neighbors(n) = &p.message else { panic!("not neighbors") };
    assert_eq!(n.expiration, SPEC_EXPIRATION);
    let got: Vec<(IpAddr, u16, u16, String)> =
        n.nodes.iter().map(|r| (r.ip, r.udp_port, r.tcp_port, hex::encode(&r.id.0[..4]))).collect();
    assert_eq!(
        got,
        vec![
            (IpAddr::V4(Ipv4Addr::new(99, 33, 22, 55)), 4444, 4445, "3155e142".to_string()),
            (IpAddr::V4(Ipv4Addr::new(1, 2, 3, 4)), 1, 1, "312c5551".to_string()),
            (ip6("2001:db8:3c4d:15::abcd:ef12"), 3333, 3333, "38643200".to_string()),
            (ip6("2001:db8:85a3:8d3:1319:8a2e:370:7348"), 999, 1000, "8dcab861".to_string()),
        ]
    );
}

#[test]
fn corrupted_packets_are_refused() {
    let good = unhex(PING_V4);
    // Flipping a data byte breaks the hash.
    let mut bad = good.clone();
    *bad.last_mut().unwrap() ^= 1;
    assert_eq!(packet::decode(&bad), Err(PacketError::Hash));
    // A wrong recovery id with a fixed-up hash: a different (or no) signer.
    let mut bad = good.clone();
    bad[96] = 7;
    let h = keccak256(&bad[32..]);
    bad[..32].copy_from_slice(h.as_slice());
    assert_eq!(packet::decode(&bad), Err(PacketError::Signature));
    let mut bad = good.clone();
    bad[96] ^= 1;
    let h = keccak256(&bad[32..]);
    bad[..32].copy_from_slice(h.as_slice());
    assert_ne!(packet::decode(&bad).map(|p| p.node_id), Ok(NodeId::from_secret_key(&spec_key())));
    // Too short, too long.
    assert_eq!(packet::decode(&good[..50]), Err(PacketError::Size(50)));
    assert_eq!(packet::decode(&[0u8; 1281]), Err(PacketError::Size(1281)));
    // An unknown type, properly signed.
    let key = spec_key();
    let (mut datagram, _) = Message::EnrRequest(EnrRequest { expiration: 1 }).encode(&key);
    datagram[97] = 0x09;
    let sig_digest = keccak256(&datagram[97..]);
    let sig = secp256k1::SECP256K1
        .sign_ecdsa_recoverable(secp256k1::Message::from_digest(sig_digest.0), &key);
    let (recid, rs) = sig.serialize_compact();
    datagram[32..96].copy_from_slice(&rs);
    datagram[96] = i32::from(recid) as u8;
    let h = keccak256(&datagram[32..]);
    datagram[..32].copy_from_slice(h.as_slice());
    assert_eq!(packet::decode(&datagram), Err(PacketError::UnknownType(9)));
}

#[test]
fn decoding_arbitrary_bytes_never_panics() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let key = spec_key();
    let samples = [
        unhex(PING_V4),
        unhex(PING_V555),
        unhex(PONG_EXTRA),
        unhex(FINDNODE_EXTRA),
        unhex(NEIGHBORS_EXTRA),
    ];
    for i in 0..3000 {
        // Random garbage after a valid header, re-signed so decoding reaches the RLP.
        let base = &samples[i % samples.len()];
        let mut signed = base[97..].to_vec();
        let n = rng.random_range(0..4);
        for _ in 0..n {
            let pos = rng.random_range(0..signed.len());
            signed[pos] = rng.random();
        }
        signed.truncate(rng.random_range(1..=signed.len()));
        let digest = keccak256(&signed);
        let sig = secp256k1::SECP256K1
            .sign_ecdsa_recoverable(secp256k1::Message::from_digest(digest.0), &key);
        let (recid, rs) = sig.serialize_compact();
        let mut datagram = vec![0u8; 32];
        datagram.extend_from_slice(&rs);
        datagram.push(i32::from(recid) as u8);
        datagram.extend_from_slice(&signed);
        let h = keccak256(&datagram[32..]);
        datagram[..32].copy_from_slice(h.as_slice());
        let _ = packet::decode(&datagram);
        // And fully random bytes.
        let len = rng.random_range(0..1400);
        let junk: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let _ = packet::decode(&junk);
        let _ = Enr::decode(&junk);
    }
}

fn record(seed: u8, ip: IpAddr, port: u16) -> NodeRecord {
    let key = SecretKey::from_byte_array([seed.max(1); 32]).unwrap();
    NodeRecord { id: NodeId::from_secret_key(&key), ip, tcp_port: port, udp_port: port + 1 }
}

#[test]
fn round_trips() {
    let key = SecretKey::from_byte_array([3u8; 32]).unwrap();
    let me = NodeId::from_secret_key(&key);
    let e4 = Endpoint { ip: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), udp_port: 30303, tcp_port: 0 };
    let e6 = Endpoint { ip: ip6("2001:db8::1"), udp_port: 1, tcp_port: 65535 };
    let messages = vec![
        Message::Ping(Ping { version: 4, from: e4, to: e6, expiration: 1 << 40, enr_seq: Some(9) }),
        Message::Ping(Ping { version: 4, from: e6, to: e4, expiration: 5, enr_seq: None }),
        Message::Pong(Pong {
            to: e4,
            ping_hash: B256::repeat_byte(7),
            expiration: 6,
            enr_seq: Some(0),
        }),
        Message::FindNode(FindNode { target: me.0, expiration: 7 }),
        Message::Neighbors(Neighbors {
            nodes: vec![record(1, e4.ip, 30303), record(2, e6.ip, 1)],
            expiration: 8,
        }),
        Message::Neighbors(Neighbors { nodes: vec![], expiration: 8 }),
        Message::EnrRequest(EnrRequest { expiration: 9 }),
        Message::EnrResponse(EnrResponse {
            request_hash: B256::repeat_byte(1),
            enr: Enr { seq: 3, id: me, ip: Some(e4.ip), tcp_port: Some(1), udp_port: Some(2) }
                .sign(&key),
        }),
    ];
    for m in messages {
        let (datagram, hash) = m.encode(&key);
        let p = packet::decode(&datagram).unwrap();
        assert_eq!(p.message, m);
        assert_eq!(p.node_id, me);
        assert_eq!(p.hash, hash);
        assert_eq!(&datagram[..32], hash.as_slice());
    }
}

#[test]
fn full_neighbors_packet_fits() {
    let key = SecretKey::from_byte_array([3u8; 32]).unwrap();
    let nodes: Vec<NodeRecord> = (0..MAX_NEIGHBORS_PER_PACKET as u8)
        .map(|i| record(i + 1, ip6("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"), 65534))
        .collect();
    let msg = Message::Neighbors(Neighbors { nodes, expiration: u64::MAX });
    let (datagram, _) = msg.encode(&key);
    assert!(datagram.len() <= MAX_PACKET_SIZE, "{} bytes", datagram.len());
    assert_eq!(packet::decode(&datagram).unwrap().message, msg);
}

#[test]
fn enr_spec_vector() {
    // The example record of the ENR specification (EIP-778): seq 1, ip 127.0.0.1,
    // udp 30303, signed with `spec_key` (RFC 6979 signatures are deterministic).
    let key = spec_key();
    let id = NodeId::from_secret_key(&key);
    let enr = Enr {
        seq: 1,
        id,
        ip: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        tcp_port: None,
        udp_port: Some(30303),
    };
    let raw = enr.sign(&key);
    let expected = unhex(
        "f884b8407098ad865b00a582051940cb9cf36836572411a47278783077011599ed5cd16b76f2635f4e234738f\
         30813a89eb9137e3e3df5266e3a1f11df72ecf1145ccb9c01826964827634826970847f00000189736563703235\
         366b31a103ca634cae0d49acb401d8a4c6b6fe8c55b70d115bf400769cc1400f3258cd31388375647082765f",
    );
    assert_eq!(hex::encode(&raw), hex::encode(&expected));
    let decoded = Enr::decode(&raw).unwrap();
    assert_eq!(decoded, enr);
    assert_eq!(
        hex::encode(id.hash()),
        "a448f24c6d18e575453db13171562b71999873db5b286df957af199ec94617f7"
    );
    // A changed byte breaks the signature.
    let mut bad = raw.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert_eq!(Enr::decode(&bad), Err(enr::EnrError::Signature));
}

#[test]
fn table_bounds_and_eviction() {
    let local = NodeId::from_secret_key(&SecretKey::from_byte_array([200u8; 32]).unwrap());
    let mut t = Table::new(local);
    assert_eq!(
        t.insert(NodeRecord { id: local, ..record(1, Ipv4Addr::LOCALHOST.into(), 1) }),
        Insert::Local
    );
    let mut full = Vec::new();
    let mut added = 0;
    for i in 0..3000u32 {
        let mut seed = [0u8; 32];
        seed[..4].copy_from_slice(&(i + 1).to_be_bytes());
        seed[31] = 1;
        let key = SecretKey::from_byte_array(seed).unwrap();
        let rec = NodeRecord {
            id: NodeId::from_secret_key(&key),
            ip: Ipv4Addr::LOCALHOST.into(),
            tcp_port: 30303,
            udp_port: 30303,
        };
        match t.insert(rec) {
            Insert::Added => added += 1,
            Insert::Full(oldest) => full.push((rec, oldest)),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(t.len(), added);
    assert!(t.len() <= table::BUCKETS * table::BUCKET_SIZE);
    // Half the nodes sit at log distance 256 from us, a quarter at 255, ...: the top
    // buckets fill up.
    assert!(!full.is_empty());
    assert!(t.len() > 4 * table::BUCKET_SIZE);
    // Re-inserting refreshes without growing.
    let some = t.nodes()[0];
    assert_eq!(t.insert(some), Insert::Updated);
    assert_eq!(t.len(), added);
    // Evicting the oldest of a full bucket promotes the freshest replacement of that bucket.
    let (last_rejected, oldest) = *full.last().unwrap();
    assert!(t.contains(&oldest.id) && !t.contains(&last_rejected.id));
    let promoted = t.remove(&oldest.id).unwrap();
    assert_eq!(promoted.id, last_rejected.id);
    assert!(!t.contains(&oldest.id) && t.contains(&last_rejected.id));
    assert_eq!(t.len(), added);
    // Closest: sorted by XOR distance, bounded.
    let target = B256::repeat_byte(0x55);
    let closest = t.closest(&target, 16);
    assert_eq!(closest.len(), 16);
    let d: Vec<B256> = closest.iter().map(|n| n.id.hash() ^ target).collect();
    assert!(d.windows(2).all(|w| w[0] <= w[1]));
    let best = t.nodes().iter().map(|n| n.id.hash() ^ target).min().unwrap();
    assert_eq!(d[0], best);
    assert!(t.least_recent(3).is_some());
}

#[test]
fn log_distance_and_buckets() {
    let a = B256::ZERO;
    assert_eq!(table::log_distance(&a, &a), 0);
    let mut b = B256::ZERO;
    b[31] = 1;
    assert_eq!(table::log_distance(&a, &b), 1);
    b[0] = 0x80;
    assert_eq!(table::log_distance(&a, &b), 256);
}

async fn spawn_local(seed: u8, bootnodes: Vec<NodeRecord>) -> Discovery {
    let key = SecretKey::from_byte_array([seed; 32]).unwrap();
    let our = NodeRecord {
        id: NodeId::from_secret_key(&key),
        ip: Ipv4Addr::LOCALHOST.into(),
        tcp_port: 30303,
        udp_port: 0,
    };
    Discovery::spawn(key, "127.0.0.1:0".parse().unwrap(), our, bootnodes).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_find_each_other_on_loopback() {
    let b = spawn_local(11, vec![]).await;
    let a = spawn_local(12, vec![b.local_record()]).await;
    let c = spawn_local(13, vec![a.local_record()]).await;
    let mut c_stream = c.subscribe();
    let target = b.local_record().id;
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(node) = c_stream.recv().await {
            if node.id == target {
                return node;
            }
        }
        panic!("stream closed");
    })
    .await
    .expect("C did not find B through A within 30 s");
    assert_eq!(found.udp_port, b.local_record().udp_port);
    assert!(c.nodes().iter().any(|n| n.id == target));
    // B learned about C too (C pinged it, they bonded both ways).
    let c_id = c.local_record().id;
    tokio::time::timeout(Duration::from_secs(10), async {
        while !b.nodes().iter().any(|n| n.id == c_id) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("B did not bond with C");
    // An explicit lookup from A towards C returns C.
    assert!(a.lookup(c_id).await.iter().any(|n| n.id == c_id));
    // A's record is valid and carries its id.
    assert!(Enr::decode(&a.local_enr()).unwrap().id == a.local_record().id);
}

async fn recv(
    sock: &UdpSocket,
    buf: &mut [u8],
) -> Result<io::Result<(usize, SocketAddr)>, tokio::time::error::Elapsed> {
    tokio::time::timeout(Duration::from_millis(700), sock.recv_from(buf)).await
}

#[tokio::test]
async fn findnode_needs_endpoint_proof_and_enr_request_is_answered() {
    let server = spawn_local(21, vec![]).await;
    let key = SecretKey::from_byte_array([22u8; 32]).unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let me = sock.local_addr().unwrap();
    let to = server.local_record().udp_addr();
    let ep = Endpoint { ip: me.ip(), udp_port: me.port(), tcp_port: 0 };
    let mut buf = vec![0u8; 2048];
    // FindNode before bonding: ignored.
    let (find, _) =
        Message::FindNode(FindNode { target: B512::ZERO, expiration: expiration() }).encode(&key);
    sock.send_to(&find, to).await.unwrap();
    assert!(recv(&sock, &mut buf).await.is_err(), "answered an unbonded FindNode");
    // Expired ping: ignored.
    let stale = Ping { version: 4, from: ep, to: ep, expiration: unix_now() - 1, enr_seq: None };
    sock.send_to(&Message::Ping(stale).encode(&key).0, to).await.unwrap();
    assert!(recv(&sock, &mut buf).await.is_err(), "answered an expired ping");
    // Ping: pong with our hash, then the server pings back (it has no proof for us).
    let ping = Ping { version: 4, from: ep, to: ep, expiration: expiration(), enr_seq: None };
    let (datagram, ping_hash) = Message::Ping(ping).encode(&key);
    sock.send_to(&datagram, to).await.unwrap();
    let mut got_pong = false;
    let mut their_ping = None;
    while !(got_pong && their_ping.is_some()) {
        let (n, _) = recv(&sock, &mut buf).await.expect("no pong/ping").unwrap();
        let p = packet::decode(&buf[..n]).unwrap();
        assert_eq!(p.node_id, server.local_record().id);
        match p.message {
            Message::Pong(pong) => {
                assert_eq!(pong.ping_hash, ping_hash);
                assert_eq!(pong.to.udp_port, me.port());
                got_pong = true;
            }
            Message::Ping(_) => their_ping = Some(p.hash),
            other => panic!("unexpected {other:?}"),
        }
    }
    // Answer their ping: now we are bonded with the server.
    let pong = Pong {
        to: Endpoint { ip: to.ip(), udp_port: to.port(), tcp_port: 0 },
        ping_hash: their_ping.unwrap(),
        expiration: expiration(),
        enr_seq: None,
    };
    sock.send_to(&Message::Pong(pong).encode(&key).0, to).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // ENRRequest: answered with the server's record, signed by its key.
    let (req, req_hash) = Message::EnrRequest(EnrRequest { expiration: expiration() }).encode(&key);
    sock.send_to(&req, to).await.unwrap();
    let (n, _) = recv(&sock, &mut buf).await.expect("no ENR response").unwrap();
    let Message::EnrResponse(resp) = packet::decode(&buf[..n]).unwrap().message else {
        panic!("not an ENR response")
    };
    assert_eq!(resp.request_hash, req_hash);
    let enr = Enr::decode(&resp.enr).unwrap();
    assert_eq!(enr.id, server.local_record().id);
    assert_eq!(enr.udp_port, Some(server.local_record().udp_port));
    // FindNode now answered (with us: we are in its table).
    let my_id = NodeId::from_secret_key(&key);
    sock.send_to(&find, to).await.unwrap();
    let (n, _) = recv(&sock, &mut buf).await.expect("FindNode not answered").unwrap();
    let Message::Neighbors(neighbors) = packet::decode(&buf[..n]).unwrap().message else {
        panic!("not neighbors")
    };
    assert!(neighbors.nodes.iter().any(|n| n.id == my_id));
    assert_eq!(server.nodes().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_nodes_are_evicted() {
    let b = spawn_local(31, vec![]).await;
    let a = spawn_local(32, vec![b.local_record()]).await;
    let b_id = b.local_record().id;
    tokio::time::timeout(Duration::from_secs(10), async {
        while !a.nodes().iter().any(|n| n.id == b_id) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("A did not bond with B");
    b.shutdown();
    // Revalidation pings B (every 5 s), gets no answer twice, and drops it.
    tokio::time::timeout(Duration::from_secs(20), async {
        while a.nodes().iter().any(|n| n.id == b_id) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("A kept the silent node B");
}
