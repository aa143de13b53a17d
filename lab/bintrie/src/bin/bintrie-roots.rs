//! Random states and their binary-trie roots, for the cross-check against geth
//! (`bench/bintrie-ref/check.sh`).
//!
//! - `bintrie-roots gen --seed S --accounts N [--out FILE]`: a deterministic random state
//!   (JSON, see `ethrex_bintrie::StateSpec`) on stdout or in FILE.
//! - `bintrie-roots roots [--depth D] STATE.json`: one `DEPTH ROOT` line per group depth
//!   (all of 1..=8 unless `--depth`), each root built in two commits with a reopen between
//!   (`StateSpec::root_in_two_commits`).

use alloy_primitives::{Address, Bytes, U256};
use clap::{Parser, Subcommand};
use ethrex_bintrie::{AccountSpec, StateSpec, GROUP_DEPTHS};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(about = "Random states and their EIP-7864 binary-trie roots")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Writes a deterministic random state as JSON.
    Gen {
        /// Seed of the generator.
        #[arg(long)]
        seed: u64,
        /// Number of accounts.
        #[arg(long)]
        accounts: usize,
        /// Output file (stdout if absent).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Prints `DEPTH ROOT` for each group depth.
    Roots {
        /// Only this group depth.
        #[arg(long)]
        depth: Option<u8>,
        /// The state (JSON).
        state: PathBuf,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bintrie-roots: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<(), Box<dyn std::error::Error>> {
    match command {
        Command::Gen { seed, accounts, out } => {
            let json = random_state(seed, accounts).to_json()?;
            match out {
                Some(path) => std::fs::write(&path, json)
                    .map_err(|e| format!("writing {}: {e}", path.display()))?,
                None => std::io::stdout().lock().write_all(json.as_bytes())?,
            }
        }
        Command::Roots { depth, state } => {
            let json =
                std::fs::read(&state).map_err(|e| format!("reading {}: {e}", state.display()))?;
            let spec = StateSpec::from_json(&json)
                .map_err(|e| format!("parsing {}: {e}", state.display()))?;
            let depths: Vec<u8> = match depth {
                Some(depth) => vec![depth],
                None => GROUP_DEPTHS.collect(),
            };
            let mut stdout = std::io::stdout().lock();
            for depth in depths {
                let root = spec.root_in_two_commits(depth)?;
                writeln!(stdout, "{depth} {root}")?;
            }
        }
    }
    Ok(())
}

/// A state meant to hit every layout case: empty accounts, header and main storage slots
/// (with slots 63/64, 255/256, top byte 0xff, 2^256-1, runs sharing a stem), zero values,
/// code of lengths around chunk and stem boundaries with PUSH data crossing chunks,
/// balances of 2^128 and more, and a few addresses written twice (the second write over
/// the first, possibly after the commit in between).
fn random_state(seed: u64, accounts: usize) -> StateSpec {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut spec = StateSpec::default();
    for _ in 0..accounts {
        let address = if !spec.accounts.is_empty() && rng.random_ratio(1, 200) {
            spec.accounts[rng.random_range(0..spec.accounts.len())].address
        } else {
            Address::from(rng.random::<[u8; 20]>())
        };
        spec.accounts.push(random_account(&mut rng, address));
    }
    spec
}

fn random_account(rng: &mut ChaCha8Rng, address: Address) -> AccountSpec {
    let mut account = AccountSpec { address, ..Default::default() };
    match rng.random_range(0..100) {
        // Empty: nonce 0, balance 0, no code, no storage.
        0..5 => {}
        // Externally owned, some with storage all the same.
        5..60 => {
            account.nonce = random_nonce(rng);
            account.balance = random_balance(rng);
            if rng.random_ratio(1, 5) {
                account.storage = random_storage(rng);
            }
        }
        // Contract.
        _ => {
            account.nonce = random_nonce(rng);
            account.balance = random_balance(rng);
            account.code = random_code(rng);
            account.storage = random_storage(rng);
        }
    }
    account
}

fn random_nonce(rng: &mut ChaCha8Rng) -> u64 {
    match rng.random_range(0..10) {
        0 => 0,
        1 => u64::MAX,
        2 => rng.random(),
        _ => rng.random_range(1..1000),
    }
}

fn random_balance(rng: &mut ChaCha8Rng) -> U256 {
    match rng.random_range(0..100) {
        0..10 => U256::ZERO,
        10..50 => U256::from(rng.random_range(1..u64::MAX)),
        50..95 => U256::from(rng.random::<u128>() >> rng.random_range(0..64)),
        95..97 => U256::from(u128::MAX),
        97 => U256::from(1) << 128,
        // 17 to 32 significant bytes: geth keeps only some of them.
        _ => U256::from_be_bytes(rng.random::<[u8; 32]>()) >> rng.random_range(0..128),
    }
}

fn random_code(rng: &mut ChaCha8Rng) -> Bytes {
    // Around chunk (31) and stem (128 chunks = 3968 bytes) boundaries, else spread out.
    const EDGES: [usize; 12] = [1, 2, 30, 31, 32, 61, 62, 63, 3937, 3968, 3969, 7936];
    let len = match rng.random_range(0..100) {
        0..15 => EDGES[rng.random_range(0..EDGES.len())],
        15..50 => rng.random_range(1..200),
        50..88 => rng.random_range(200..4000),
        88..98 => rng.random_range(4000..12_000),
        _ => rng.random_range(12_000..24_577),
    };
    let mut code = Vec::with_capacity(len + 33);
    if rng.random_bool(0.5) {
        // Raw bytes: about one in eight is a PUSH.
        code.extend((0..len).map(|_| rng.random::<u8>()));
    } else {
        // Instruction stream, PUSH-heavy, PUSH32 often; the last PUSH may be cut short.
        while code.len() < len {
            match rng.random_range(0..10) {
                0..3 => {
                    let n = rng.random_range(1..=32u8);
                    code.push(0x5f + n);
                    code.extend((0..n).map(|_| rng.random::<u8>()));
                }
                3 => {
                    code.push(0x7f);
                    code.extend([0xee; 32]);
                }
                _ => code.push(rng.random_range(0..0x60)),
            }
        }
        code.truncate(len);
    }
    code.into()
}

fn random_storage(rng: &mut ChaCha8Rng) -> BTreeMap<U256, U256> {
    const EDGES: [u64; 10] = [0, 1, 63, 64, 65, 127, 128, 255, 256, 257];
    let count = match rng.random_range(0..100) {
        0..30 => rng.random_range(0..4),
        30..90 => rng.random_range(4..24),
        _ => rng.random_range(24..300),
    };
    let run_base = U256::from_be_bytes(rng.random::<[u8; 32]>()) & !U256::from(0xff);
    let mut storage = BTreeMap::new();
    for _ in 0..count {
        let slot = match rng.random_range(0..100) {
            0..20 => U256::from(rng.random_range(0..64)),
            20..30 => U256::from(EDGES[rng.random_range(0..EDGES.len())]),
            30..45 => U256::from(rng.random_range(64..5000)),
            45..70 => U256::from_be_bytes(rng.random::<[u8; 32]>()),
            70..75 => {
                let mut bytes = rng.random::<[u8; 32]>();
                bytes[0] = 0xff;
                U256::from_be_bytes(bytes)
            }
            75..77 => U256::MAX,
            // Slots sharing one stem.
            _ => run_base | U256::from(rng.random::<u8>()),
        };
        let value = match rng.random_range(0..100) {
            0..6 => U256::ZERO,
            6..40 => U256::from(rng.random_range(1..1_000_000u64)),
            _ => U256::from_be_bytes(rng.random::<[u8; 32]>()),
        };
        storage.insert(slot, value);
    }
    storage
}
