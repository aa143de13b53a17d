//! The transaction mix and its builders.
//!
//! A block is planned in two steps. First each transaction is *planned*: kind, sender,
//! recipient, calldata and gas limit are chosen, but no nonce yet, so a plan that does not
//! fit the block's remaining gas can be swapped for a plain transfer without undoing
//! anything. Then the plan is *committed*: the sender's nonce is taken, then each
//! authorization's authority nonce (in that order, as EIP-7702 processing does, so a
//! self-sponsored authorization carries the sender's nonce + 1).

use super::accounts::Sender;
use super::contracts::{self, *};
use super::gas::Costs;
use super::Workload;
use crate::keys::{derive, sign_authorization, sign_tx};
use alloy_consensus::{
    TxEip1559, TxEip2930, TxEip4844, TxEip4844Variant, TxEip7702, TxLegacy, TypedTransaction,
};
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_eips::eip7702::Authorization;
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use ethrex_common::{Fork, Transaction};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Relative weights of the per-transaction kinds (compute-heavy and blob transactions
/// are placed per block on top of these, see `plan_block`).
const MIX: [(Kind, u32); 7] = [
    (Kind::Erc20, 440),
    (Kind::Eth, 220),
    (Kind::Swap, 150),
    (Kind::Nft, 50),
    (Kind::Writer, 50),
    (Kind::Deploy, 30),
    (Kind::Eip7702, 30),
];

/// With a state filler, the share (percent) of ETH and ERC-20 transfer recipients drawn
/// uniformly from the filler's cold key space (existing filler accounts for ETH, holders
/// whose balance slot the filler wrote for ERC-20) instead of the hot Zipf-ranked holders
/// and senders: 30%. The Zipf head stands for what a warm cache serves (popular tokens,
/// pools, active senders); the filler for what it misses (payments to long-idle
/// addresses, the long tail of token holders). A third of the recipients makes those
/// misses a clear part of a block's state I/O without turning the mix into the worst
/// case, which `WorkloadKind::SloadRandom` is. With `COLD_READ_PCT`, a block of the mix
/// then touches ~25 cold accounts of ~430 and ~520 cold slots of ~2,100 in its BAL
/// (measured by `workload::tests::filled_mix_imports_and_touches_the_cold_state`).
pub(crate) const COLD_RECIPIENT_PCT: u32 = 30;
/// With filler slots, the share (percent) of a block's plain transactions replaced by
/// cold reads: calls reading `COLD_READS` random filler slots of the SloadRandom contract,
/// as a contract reading many users' balances or positions does (~10 transactions and
/// ~480 cold slot reads in a block of 200-500 transactions).
pub(crate) const COLD_READ_PCT: u32 = 3;
/// Filler slots one cold-read transaction reads.
const COLD_READS: std::ops::RangeInclusive<u64> = 16..=64;
/// A SloadRandom block ends when less than this much gas is left.
const MIN_SLOAD_TX_GAS: u64 = 1_000_000;
/// Gas a SloadRandom transaction's limit keeps above its counted use (the count is exact;
/// this covers a calldata byte priced higher than assumed).
const SLOAD_MARGIN: u64 = 1_000;

/// Keccak rounds of a compute-heavy transaction: 10k..28k rounds is ~1..3M gas.
const BURN_ROUNDS: std::ops::RangeInclusive<u64> = 10_000..=28_000;
/// Gas of one round of Burner's loop, counted from the compiled code (19 opcodes plus a
/// 32-byte KECCAK256); recount after changing Burner.sol.
const BURN_GAS_PER_ROUND: u64 = 104;

/// Fork-dependent sizes of the mix. EIP-8037 (Amsterdam) prices state growth ~5x higher
/// and counts block gas as max(regular, state), so the same mix would give far less block
/// gas there: Amsterdam creates fewer fresh slots and overwrites more (regular gas), so
/// both forks land near the same median block gas (~25M at 200-500 transactions).
#[derive(Debug, Clone)]
pub(crate) struct Profile {
    writer_fresh_pct: u32,
    writer_fresh_n: std::ops::RangeInclusive<u64>,
    writer_overwrite_n: std::ops::RangeInclusive<u64>,
    /// Share of swaps that go two hops through the router.
    router_pct: u32,
}

impl Profile {
    pub(crate) fn for_fork(fork: Fork) -> Self {
        if fork >= Fork::Amsterdam {
            Profile {
                writer_fresh_pct: 20,
                writer_fresh_n: 4..=16,
                writer_overwrite_n: 16..=160,
                router_pct: 50,
            }
        } else {
            Profile {
                writer_fresh_pct: 40,
                writer_fresh_n: 4..=32,
                writer_overwrite_n: 8..=48,
                router_pct: 50,
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Erc20,
    Eth,
    Swap,
    Nft,
    Writer,
    Deploy,
    Eip7702,
    Compute,
    Blob,
    /// An EIP-7002 withdrawal or EIP-7251 consolidation request (Prague on).
    Request,
    /// A SELFDESTRUCT: of a contract created in the same transaction, or of a genesis one.
    SelfDestruct,
    /// Reads of random filler slots (only with a state filler).
    ColdRead,
}

/// A transaction chosen but not yet given nonces or signatures.
pub(crate) struct Planned {
    pub(crate) kind: &'static str,
    pub(crate) sender: usize,
    pub(crate) tx: TypedTransaction,
    /// (authority sender index, authorization); nonces filled in at commit.
    pub(crate) auths: Vec<(usize, Authorization)>,
}

impl Planned {
    fn gas_limit(&self) -> u64 {
        use alloy_consensus::Transaction as _;
        self.tx.gas_limit()
    }

    /// Signs the authorizations and the transaction.
    pub(crate) fn sign(self, senders: &[Sender]) -> Transaction {
        let mut tx = self.tx;
        if let TypedTransaction::Eip7702(t) = &mut tx {
            t.authorization_list = self
                .auths
                .into_iter()
                .map(|(who, auth)| sign_authorization(&senders[who].signer, auth))
                .collect();
        }
        sign_tx(&senders[self.sender].signer, tx)
    }
}

fn set_nonce(tx: &mut TypedTransaction, nonce: u64) {
    match tx {
        TypedTransaction::Legacy(t) => t.nonce = nonce,
        TypedTransaction::Eip2930(t) => t.nonce = nonce,
        TypedTransaction::Eip1559(t) => t.nonce = nonce,
        TypedTransaction::Eip4844(TxEip4844Variant::TxEip4844(t)) => t.nonce = nonce,
        TypedTransaction::Eip4844(_) => {
            unreachable!("the workload builds blob transactions without sidecars")
        }
        TypedTransaction::Eip7702(t) => t.nonce = nonce,
    }
}

/// Envelope types for plain calls.
#[derive(Debug, Clone, Copy)]
enum Ty {
    Legacy,
    AccessList,
    DynamicFee,
}

/// Fee fields of one transaction.
#[derive(Debug, Clone, Copy)]
struct Fee {
    /// Legacy / EIP-2930 gas price.
    gas_price: u128,
    max_fee: u128,
    tip: u128,
}

impl Workload {
    fn pick_ty(rng: &mut ChaCha8Rng, legacy_pct: u32, access_list_pct: u32) -> Ty {
        let r = rng.random_range(0..100);
        if r < legacy_pct {
            Ty::Legacy
        } else if r < legacy_pct + access_list_pct {
            Ty::AccessList
        } else {
            Ty::DynamicFee
        }
    }

    /// Tips from 0.01 to 1.28 gwei, mostly low, as on mainnet; the fee cap leaves room for
    /// the base fee to double.
    fn fee(rng: &mut ChaCha8Rng, base_fee: u64) -> Fee {
        let tip = 10_000_000u128 << rng.random_range(0..8u32);
        let base = base_fee as u128;
        Fee { gas_price: base + tip, max_fee: 2 * base + tip, tip }
    }

    /// 30% of the traffic from a few hot accounts (Zipf), the rest from the long tail.
    fn pick_sender(&self, rng: &mut ChaCha8Rng) -> usize {
        if rng.random_bool(0.3) {
            self.sender_pop.sample(rng)
        } else {
            rng.random_range(0..self.senders.len())
        }
    }

    fn fresh_address(&mut self) -> Address {
        let a = crate::keys::derive_address(
            self.config.seed,
            "import-bench/fresh",
            self.fresh_addresses,
        );
        self.fresh_addresses += 1;
        a
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "one parameter per transaction field the callers vary"
    )]
    fn build(
        &self,
        ty: Ty,
        to: TxKind,
        value: U256,
        input: Bytes,
        gas_limit: u64,
        access_list: AccessList,
        fee: Fee,
    ) -> TypedTransaction {
        let chain_id = self.config.chain_id;
        match ty {
            Ty::Legacy => TypedTransaction::Legacy(TxLegacy {
                chain_id: Some(chain_id),
                nonce: 0,
                gas_price: fee.gas_price,
                gas_limit,
                to,
                value,
                input,
            }),
            Ty::AccessList => TypedTransaction::Eip2930(TxEip2930 {
                chain_id,
                nonce: 0,
                gas_price: fee.gas_price,
                gas_limit,
                to,
                value,
                access_list,
                input,
            }),
            Ty::DynamicFee => TypedTransaction::Eip1559(TxEip1559 {
                chain_id,
                nonce: 0,
                gas_limit,
                max_fee_per_gas: fee.max_fee,
                max_priority_fee_per_gas: fee.tip,
                to,
                value,
                access_list,
                input,
            }),
        }
    }

    fn plan(&self, kind: &'static str, sender: usize, tx: TypedTransaction) -> Planned {
        Planned { kind, sender, tx, auths: Vec::new() }
    }

    /// Plans and commits the transactions of one block.
    pub(crate) fn plan_block(
        &mut self,
        number: u64,
        base_fee: u64,
        blob_base_fee: u128,
    ) -> Vec<Planned> {
        let mut rng =
            ChaCha8Rng::from_seed(derive(self.config.seed, "import-bench/block", number).0);
        if self.config.kind == super::WorkloadKind::SloadRandom {
            return self.plan_sload_block(&mut rng, base_fee);
        }
        let count = rng.random_range(self.config.min_txs..=self.config.max_txs);

        let total_weight: u32 = MIX.iter().map(|(_, w)| w).sum();
        let mut kinds: Vec<Kind> = (0..count)
            .map(|_| {
                let mut r = rng.random_range(0..total_weight);
                for (kind, w) in MIX {
                    if r < w {
                        return kind;
                    }
                    r -= w;
                }
                unreachable!()
            })
            .collect();
        // 1-2 compute-heavy and (from Cancun) 1-3 blob transactions per block, at random
        // positions.
        let compute = rng.random_range(1..=2usize).min(count);
        for _ in 0..compute {
            let at = rng.random_range(0..count);
            kinds[at] = Kind::Compute;
        }
        if self.config.fork >= Fork::Cancun {
            for _ in 0..rng.random_range(1..=3usize) {
                let at = rng.random_range(0..count);
                if kinds[at] != Kind::Compute {
                    kinds[at] = Kind::Blob;
                }
            }
        }
        // About one execution request (Prague on) and one self-destruct every other block,
        // so the end-of-block system calls have requests to dequeue.
        for (kind, from) in [(Kind::Request, Fork::Prague), (Kind::SelfDestruct, Fork::Cancun)] {
            if self.config.fork >= from && rng.random_bool(0.5) {
                let at = rng.random_range(0..count);
                if kinds[at] != Kind::Compute && kinds[at] != Kind::Blob {
                    kinds[at] = kind;
                }
            }
        }
        // With filler slots, cold reads in place of some plain transactions (no draw
        // without a filler: the plain fixture stays as it was).
        if self.cold_read_slots() > 0 {
            for kind in &mut kinds {
                let plain = !matches!(
                    kind,
                    Kind::Compute | Kind::Blob | Kind::Request | Kind::SelfDestruct
                );
                if rng.random_range(0..100) < COLD_READ_PCT && plain {
                    *kind = Kind::ColdRead;
                }
            }
        }

        // Gas limits of a block add up to at most 98% of the block gas limit (the builder
        // rejects a transaction whose limit exceeds the gas left).
        let budget = self.config.gas_limit - self.config.gas_limit / 50;
        let mut used = 0u64;
        let mut blobs_left = super::MAX_BLOBS_PER_BLOCK;
        let mut out = Vec::with_capacity(count);
        for kind in kinds {
            let mut planned = match kind {
                Kind::Erc20 => self.plan_erc20(&mut rng, base_fee),
                Kind::Eth => self.plan_eth(&mut rng, base_fee),
                Kind::Swap => self.plan_swap(&mut rng, base_fee),
                Kind::Nft => self.plan_nft(&mut rng, base_fee),
                Kind::Writer => self.plan_writer(&mut rng, base_fee),
                Kind::Deploy => self.plan_deploy(&mut rng, base_fee),
                Kind::Eip7702 => self.plan_7702(&mut rng, base_fee),
                Kind::Compute => self.plan_compute(&mut rng, base_fee),
                Kind::Blob => self.plan_blob(&mut rng, base_fee, blob_base_fee, &mut blobs_left),
                Kind::Request => self.plan_request(&mut rng, base_fee),
                Kind::SelfDestruct => self.plan_selfdestruct(&mut rng, base_fee),
                Kind::ColdRead => self.plan_cold_read(&mut rng, base_fee),
            };
            if used + planned.gas_limit() > budget {
                planned = self.plan_plain_transfer(&mut rng, base_fee);
                if used + planned.gas_limit() > budget {
                    break;
                }
            }
            used += planned.gas_limit();
            self.commit(&mut planned);
            out.push(planned);
        }
        out
    }

    fn commit(&mut self, planned: &mut Planned) {
        let nonce = self.senders[planned.sender].bump();
        set_nonce(&mut planned.tx, nonce);
        for (who, auth) in &mut planned.auths {
            auth.nonce = self.senders[*who].bump();
            if !self.senders[*who].delegated {
                self.senders[*who].delegated = true;
                self.delegated.push(*who);
            }
        }
    }

    // ---- kinds ----

    /// ERC-20 `transfer`: popular tokens, mostly to popular holders (their balance slots
    /// are written by many transactions of a block), sometimes to a fresh address (a new
    /// balance slot).
    fn plan_erc20(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let t = self.token_pop.sample(rng);
        let token = self.addrs.tokens[t];
        // Tokens are the filler's first contracts: filler holder j < slots_of(t) has a
        // balance slot in token t.
        let cold_holders = self.config.filler.as_ref().map_or(0, |f| f.slots_of(t));
        let (to, fresh) = if cold_holders > 0 && rng.random_range(0..100) < COLD_RECIPIENT_PCT {
            let filler = self.config.filler.as_ref().expect("checked");
            (filler.account(rng.random_range(0..cold_holders)), false)
        } else {
            let r = rng.random_range(0..100);
            if r < 85 {
                (self.holders[self.holder_pop.sample(rng)], false)
            } else if r < 95 {
                (self.senders[self.pick_sender(rng)].address, false)
            } else {
                (self.fresh_address(), true)
            }
        };
        // 0.001 .. 100 tokens.
        let amount = U256::from(rng.random_range(1_000_000_000_000_000u128..=100 * super::ETHER));
        let input = token_transfer(to, amount);
        let c = self.costs;
        let exec =
            c.cold_account + 6_000 + c.slot_update + if fresh { c.slot_new } else { c.slot_update };
        let ty = Self::pick_ty(rng, 12, 10);
        let (access_list, extra) = match ty {
            Ty::AccessList => {
                let keys = vec![
                    B256::from(
                        token_balance_slot(self.senders[sender].address).to_be_bytes::<32>(),
                    ),
                    B256::from(token_balance_slot(to).to_be_bytes::<32>()),
                ];
                (
                    AccessList(vec![AccessListItem { address: token, storage_keys: keys }]),
                    c.al_address + 2 * c.al_key,
                )
            }
            _ => (AccessList::default(), 0),
        };
        let gas = c.limit(input.len(), extra, exec);
        let fee = Self::fee(rng, base_fee);
        let tx = self.build(ty, TxKind::Call(token), U256::ZERO, input, gas, access_list, fee);
        self.plan("erc20", sender, tx)
    }

    /// Native transfer: to another sender (possibly a delegated one, which then runs the
    /// Delegate's receive), to a holder, or to a never-seen address (a new account).
    fn plan_eth(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let cold_accounts = self.config.filler.as_ref().map_or(0, |f| f.accounts);
        let (to, fresh, delegated) =
            if cold_accounts > 0 && rng.random_range(0..100) < COLD_RECIPIENT_PCT {
                let filler = self.config.filler.as_ref().expect("checked");
                (filler.account(rng.random_range(0..cold_accounts)), false, false)
            } else {
                let r = rng.random_range(0..100);
                if r < 35 {
                    (self.fresh_address(), true, false)
                } else if r < 75 {
                    let s = &self.senders[self.pick_sender(rng)];
                    (s.address, false, s.delegated)
                } else {
                    (self.holders[rng.random_range(0..self.holders.len())], false, false)
                }
            };
        let value = U256::from(rng.random_range(100_000_000_000_000u128..=super::ETHER));
        let ty = Self::pick_ty(rng, 30, 5);
        self.eth_transfer(rng, base_fee, sender, to, value, fresh, delegated, ty, "eth")
    }

    /// The cheapest transaction: a transfer between two senders that are not delegated.
    fn plan_plain_transfer(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let mut to = rng.random_range(0..self.senders.len());
        while self.senders[to].delegated {
            to = (to + 1) % self.senders.len();
        }
        let to = self.senders[to].address;
        self.eth_transfer(
            rng,
            base_fee,
            sender,
            to,
            U256::from(1_000_000_000u64),
            false,
            false,
            Ty::DynamicFee,
            "eth",
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn eth_transfer(
        &mut self,
        rng: &mut ChaCha8Rng,
        base_fee: u64,
        sender: usize,
        to: Address,
        value: U256,
        fresh: bool,
        delegated: bool,
        ty: Ty,
        kind: &'static str,
    ) -> Planned {
        let c = self.costs;
        // Before Amsterdam a top-level transfer creating an account costs nothing extra and
        // a plain transfer is exactly 21000 (what wallets set); from Amsterdam the new
        // account is charged as state gas (EIP-8037).
        let gas = if delegated {
            c.limit(0, 0, c.cold_account + 3_000)
        } else if fresh && self.config.fork >= Fork::Amsterdam {
            c.limit(0, 0, c.new_account)
        } else {
            21_000
        };
        let (access_list, gas) = match ty {
            Ty::AccessList => (
                AccessList(vec![AccessListItem { address: to, storage_keys: vec![] }]),
                gas + c.al_address,
            ),
            _ => (AccessList::default(), gas),
        };
        let fee = Self::fee(rng, base_fee);
        let tx = self.build(ty, TxKind::Call(to), value, Bytes::new(), gas, access_list, fee);
        self.plan(kind, sender, tx)
    }

    /// Constant-product swap on a hot pool, directly or (as most mainnet swaps) two hops
    /// through the router: every hop reads and writes both reserves of its pool, pulls
    /// the input token (transferFrom under an infinite approval) and pushes the output.
    fn plan_swap(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let amount_in =
            U256::from(rng.random_range(10_000_000_000_000_000u128..=10 * super::ETHER));
        let c = self.costs;
        // One hop inside the pool: two token-address reads, two reserve updates, two cold
        // token calls, the allowance read, four balance updates, three logs, call overhead.
        let hop = 2 * c.cold_slot
            + 2 * c.slot_update
            + 2 * c.cold_account
            + c.cold_slot
            + 4 * c.slot_update
            + 21_000;
        let (kind, to, input, exec) = if rng.random_range(0..100) < self.profile.router_pct {
            let (a, zf_a, b, zf_b) = ROUTER_PATHS[rng.random_range(0..ROUTER_PATHS.len())];
            let (pool_a, pool_b) = (self.addrs.pools[a], self.addrs.pools[b]);
            let input = router_swap2(pool_a, zf_a, pool_b, zf_b, amount_in);
            // Router and both pools cold, two token-address views, the pull into the
            // router, two hops, the push out, call overhead.
            let pull = c.cold_account + c.cold_slot + 2 * c.slot_update + 2_000;
            // Inside the router the token accounts are warm after the pull.
            let exec = 3 * c.cold_account
                + 2 * 2_800
                + pull
                + 2 * (hop - 20_000)
                + 2 * c.slot_update
                + 2_000
                + 10_000;
            ("router-swap", self.addrs.router, input, exec)
        } else {
            let zero_for_one = rng.random_bool(0.5);
            let input = pool_swap(zero_for_one, amount_in, U256::ZERO);
            ("swap", self.addrs.pools[self.pool_pop.sample(rng)], input, c.cold_account + hop)
        };
        let ty = Self::pick_ty(rng, 5, 0);
        let gas = c.limit(input.len(), 0, exec);
        let fee = Self::fee(rng, base_fee);
        let tx =
            self.build(ty, TxKind::Call(to), U256::ZERO, input, gas, AccessList::default(), fee);
        self.plan(kind, sender, tx)
    }

    /// NFT mint of 1-3 tokens: the global counter (hot) plus a fresh owner slot per token.
    fn plan_nft(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let count = match rng.random_range(0..10) {
            0..7 => 1,
            7..9 => 2,
            _ => 3,
        };
        let input = nft_mint(count);
        let c = self.costs;
        let exec =
            c.cold_account + 3_000 + c.slot_update + count * (c.slot_new + 2_200) + c.slot_new;
        let gas = c.limit(input.len(), 0, exec);
        let fee = Self::fee(rng, base_fee);
        let tx = self.build(
            Ty::DynamicFee,
            TxKind::Call(self.addrs.nft),
            U256::ZERO,
            input,
            gas,
            AccessList::default(),
            fee,
        );
        self.plan("nft", sender, tx)
    }

    /// Storage-heavy batch: `n` slots of the Writer, either fresh (never written) or
    /// overwrites of pre-filled slots (overlapping with other batches of the block).
    fn plan_writer(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let p = &self.profile;
        let fresh = rng.random_range(0..100) < p.writer_fresh_pct;
        let n = rng.random_range(if fresh {
            p.writer_fresh_n.clone()
        } else {
            p.writer_overwrite_n.clone()
        });
        let start = if fresh {
            let s = self.writer_cursor;
            self.writer_cursor += n;
            s
        } else {
            rng.random_range(0..WRITER_PREFILLED - n)
        };
        let seed = rng.random_range(1..1u64 << 60);
        let input = writer_write(start, n, seed);
        let c = self.costs;
        let per_slot = if fresh { c.slot_new } else { c.slot_update } + 200;
        let exec = c.cold_account + 3_000 + n * per_slot;
        let gas = c.limit(input.len(), 0, exec);
        let fee = Self::fee(rng, base_fee);
        let tx = self.build(
            Ty::DynamicFee,
            TxKind::Call(self.addrs.writer),
            U256::ZERO,
            input,
            gas,
            AccessList::default(),
            fee,
        );
        self.plan("writer", sender, tx)
    }

    /// Contract deployments: CREATE2 and CREATE through the factory, and plain
    /// contract-creation transactions (a Child, or now and then a whole Token).
    fn plan_deploy(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let c = self.costs;
        let v = rng.random_range(1..u32::MAX as u64);
        let child_deposit = CHILD_RUNTIME.len() as u64 * c.code_byte;
        let child_init = 2 * c.slot_new + 5_000;
        let fee = Self::fee(rng, base_fee);
        let r = rng.random_range(0..100);
        let (kind, to, input, gas) = if r < 70 {
            let (input, hashing) = if r < 40 {
                let salt = derive(self.config.seed, "import-bench/salt", self.salts);
                self.salts += 1;
                (factory_deploy2(salt, v), 6 * (CHILD_CREATION.len() as u64 + 32).div_ceil(32))
            } else {
                (factory_deploy(v), 0)
            };
            // Factory account, counter update, CREATE, the child's constructor and code,
            // memory for the initcode, the log.
            let exec = c.cold_account
                + c.slot_update
                + c.create
                + hashing
                + child_init
                + child_deposit
                + 12_000;
            let gas = c.limit(input.len(), 0, exec);
            ("create", TxKind::Call(self.addrs.factory), input, gas)
        } else {
            let (creation, runtime_len, arg, ctor) = if r < 90 {
                (&*CHILD_CREATION, CHILD_RUNTIME.len(), U256::from(v), child_init)
            } else {
                (
                    &*TOKEN_CREATION,
                    TOKEN_RUNTIME.len(),
                    U256::from(v) * U256::from(super::ETHER),
                    2 * c.slot_new + 8_000,
                )
            };
            let input = contracts::creation_with_arg(creation, arg);
            let exec = ctor + runtime_len as u64 * c.code_byte;
            let gas = c.limit(input.len(), c.create_tx_intrinsic(input.len()), exec);
            ("create-tx", TxKind::Create, input, gas)
        };
        let ty = if kind == "create-tx" && rng.random_range(0..100) < 30 {
            Ty::Legacy
        } else {
            Ty::DynamicFee
        };
        let tx = self.build(ty, to, U256::ZERO, input, gas, AccessList::default(), fee);
        self.plan(kind, sender, tx)
    }

    /// A long keccak chain (~1-3M gas).
    /// An EIP-7002 withdrawal request (48-byte validator key, 8-byte amount) or an EIP-7251
    /// consolidation request (two 48-byte keys) to its predeploy. The fee starts at 1 wei
    /// and the workload stays under the per-block target, so 1000 wei always covers it.
    fn plan_request(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        use alloy_eips::{eip7002, eip7251};
        let sender = self.pick_sender(rng);
        let key = |rng: &mut ChaCha8Rng| (0..48).map(|_| rng.random::<u8>()).collect::<Vec<u8>>();
        // The request is queued in fresh slots: three for a withdrawal (source, key,
        // amount), five for a consolidation (source and two keys).
        let (kind, to, input, queue_slots) = if rng.random_bool(0.5) {
            let mut data = key(rng);
            data.extend_from_slice(&rng.random_range(0..32_000_000_000u64).to_be_bytes());
            ("withdrawal-request", eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS, data, 3)
        } else {
            let mut data = key(rng);
            data.extend(key(rng));
            ("consolidation-request", eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, data, 5)
        };
        let c = self.costs;
        // The fee read, the request count and the queue tail updated, the queue slots (one
        // spare), and the contract's own work.
        let exec =
            c.cold_account + c.cold_slot + 2 * c.slot_new + (queue_slots + 1) * c.slot_new + 20_000;
        let gas = c.limit(input.len(), 0, exec);
        let fee = Self::fee(rng, base_fee);
        let tx = self.build(
            Ty::DynamicFee,
            TxKind::Call(to),
            U256::from(1_000),
            Bytes::from(input),
            gas,
            AccessList::default(),
            fee,
        );
        self.plan(kind, sender, tx)
    }

    /// A self-destruct: a creation whose init code self-destructs (the account is created
    /// and deleted in one transaction, EIP-6780), or a call to the genesis contract that
    /// self-destructs to its caller (only its balance moves).
    fn plan_selfdestruct(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let c = self.costs;
        let code = Bytes::from_static(&super::contracts::SELFDESTRUCT_TO_CALLER);
        let (kind, to, value, input, gas) = if rng.random_bool(0.5) {
            let intrinsic = c.create_tx_intrinsic(code.len());
            let exec = 5_000 + c.cold_account + c.new_account;
            let gas = c.limit(code.len(), intrinsic, exec);
            ("create-selfdestruct", TxKind::Create, U256::from(1), code, gas)
        } else {
            let exec = 5_000 + 2 * c.cold_account + c.new_account;
            let to = TxKind::Call(self.addrs.destructor);
            ("selfdestruct", to, U256::ZERO, Bytes::new(), c.limit(0, 0, exec))
        };
        let fee = Self::fee(rng, base_fee);
        let tx = self.build(Ty::DynamicFee, to, value, input, gas, AccessList::default(), fee);
        self.plan(kind, sender, tx)
    }

    fn plan_compute(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let rounds = rng.random_range(BURN_ROUNDS);
        let input = burner_burn(rounds);
        let c = self.costs;
        let exec = c.cold_account + c.slot_update + 5_000 + rounds * BURN_GAS_PER_ROUND;
        let gas = c.limit(input.len(), 0, exec);
        let fee = Self::fee(rng, base_fee);
        let tx = self.build(
            Ty::DynamicFee,
            TxKind::Call(self.addrs.burner),
            U256::ZERO,
            input,
            gas,
            AccessList::default(),
            fee,
        );
        self.plan("compute", sender, tx)
    }

    /// EIP-7702: a type-4 transaction delegating 1-2 EOAs to the Delegate contract (some
    /// self-sponsored) and calling the first one, or a call to an already delegated EOA.
    fn plan_7702(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        if self.delegated.len() < 8 || rng.random_range(0..100) < 35 {
            self.plan_set_code(rng, base_fee)
        } else {
            self.plan_delegated_call(rng, base_fee)
        }
    }

    fn plan_set_code(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let n_auths = if rng.random_range(0..100) < 70 { 1 } else { 2 };
        let mut authorities = Vec::with_capacity(n_auths);
        if rng.random_range(0..100) < 30 {
            authorities.push(sender);
        }
        while authorities.len() < n_auths {
            let a = rng.random_range(0..self.senders.len());
            if a != sender && !authorities.contains(&a) {
                authorities.push(a);
            }
        }
        let auths = authorities
            .iter()
            .map(|&who| {
                (
                    who,
                    Authorization {
                        chain_id: U256::from(self.config.chain_id),
                        address: self.addrs.delegate,
                        nonce: 0,
                    },
                )
            })
            .collect();
        let to = self.senders[authorities[0]].address;
        let input = delegate_ping();
        let c = self.costs;
        let exec = c.cold_account + c.slot_new + 2_500 + 3_000;
        let gas = c.limit(input.len(), n_auths as u64 * c.auth, exec);
        let fee = Self::fee(rng, base_fee);
        let tx = TypedTransaction::Eip7702(TxEip7702 {
            chain_id: self.config.chain_id,
            nonce: 0,
            gas_limit: gas,
            max_fee_per_gas: fee.max_fee,
            max_priority_fee_per_gas: fee.tip,
            to,
            value: U256::ZERO,
            access_list: AccessList::default(),
            authorization_list: Vec::new(),
            input,
        });
        Planned { kind: "set-code", sender, tx, auths }
    }

    fn plan_delegated_call(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let target = self.delegated[rng.random_range(0..self.delegated.len())];
        let to = self.senders[target].address;
        let c = self.costs;
        let (input, exec) = if rng.random_bool(0.5) {
            (delegate_ping(), c.cold_account + c.slot_new + 2_500 + 3_000)
        } else {
            let token = self.addrs.tokens[self.token_pop.sample(rng)];
            let recipient = self.holders[self.holder_pop.sample(rng)];
            let amount = U256::from(rng.random_range(1_000_000_000_000_000u128..=super::ETHER));
            let exec = c.cold_account
                + c.slot_new
                + 2 * c.cold_account
                + 2 * c.slot_update
                + 2_500
                + 8_000;
            (delegate_forward(token, recipient, amount), exec)
        };
        let gas = c.limit(input.len(), 0, exec);
        let fee = Self::fee(rng, base_fee);
        let tx = self.build(
            Ty::DynamicFee,
            TxKind::Call(to),
            U256::ZERO,
            input,
            gas,
            AccessList::default(),
            fee,
        );
        self.plan("delegated-call", sender, tx)
    }

    /// Rollup-style blob transaction: 1-2 blobs (versioned hashes only: blobs are not part
    /// of blocks) and a short calldata header, to an inbox address.
    fn plan_blob(
        &mut self,
        rng: &mut ChaCha8Rng,
        base_fee: u64,
        blob_base_fee: u128,
        blobs_left: &mut usize,
    ) -> Planned {
        let blobs = rng.random_range(1..=2usize).min(*blobs_left);
        if blobs == 0 {
            return self.plan_erc20(rng, base_fee);
        }
        *blobs_left -= blobs;
        let sender = self.pick_sender(rng);
        let hashes = (0..blobs)
            .map(|_| {
                let mut h = derive(self.config.seed, "import-bench/blob", self.blob_hashes);
                self.blob_hashes += 1;
                h.0[0] = alloy_eips::eip4844::VERSIONED_HASH_VERSION_KZG;
                h
            })
            .collect();
        let header: Vec<u8> = (0..rng.random_range(16..=96usize)).map(|_| rng.random()).collect();
        let input = Bytes::from(header);
        let c = self.costs;
        let gas = c.limit(input.len(), 0, 0);
        let fee = Self::fee(rng, base_fee);
        let tx = TypedTransaction::Eip4844(TxEip4844Variant::TxEip4844(TxEip4844 {
            chain_id: self.config.chain_id,
            nonce: 0,
            gas_limit: gas,
            max_fee_per_gas: fee.max_fee,
            max_priority_fee_per_gas: fee.tip,
            to: self.addrs.blob_inbox,
            value: U256::ZERO,
            access_list: AccessList::default(),
            blob_versioned_hashes: hashes,
            max_fee_per_blob_gas: blob_base_fee * 2 + 1,
            input,
        }));
        self.plan("blob", sender, tx)
    }

    // ---- reads of the filler's cold slots ----

    /// Filler slots of the SloadRandom contract (0 without a filler).
    fn cold_read_slots(&self) -> u64 {
        self.config.filler.as_ref().map_or(0, |f| f.slots_of(self.sload_index()))
    }

    /// The SloadRandom contract's index among the filler's contracts.
    fn sload_index(&self) -> usize {
        match self.config.kind {
            super::WorkloadKind::Mix => TOKENS,
            super::WorkloadKind::SloadRandom => 0,
        }
    }

    /// SloadRandom calldata reading `n` distinct random filler slots (at most all of
    /// them), and the reads it makes.
    fn sload_call(&self, rng: &mut ChaCha8Rng, n: u64) -> (Bytes, u64) {
        let filler = self.config.filler.as_ref().expect("SloadRandom needs a filler");
        let m = self.cold_read_slots();
        assert!(m > 0, "SloadRandom needs filler slots");
        let n = n.min(m);
        let start = rng.random_range(0..m);
        // A stride coprime to m visits m distinct keys before repeating one.
        let stride = loop {
            let s = if m == 1 { 1 } else { rng.random_range(1..m) };
            if gcd(s, m) == 1 {
                break s;
            }
        };
        (sload_random(filler.account_prefix(), start, stride, n, m), n)
    }

    /// A transaction reading a few dozen cold filler slots (`COLD_READS`).
    fn plan_cold_read(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Planned {
        let sender = self.pick_sender(rng);
        let reads = rng.random_range(COLD_READS);
        let (input, n) = self.sload_call(rng, reads);
        let exec = SLOAD_RANDOM_SETUP_GAS + n * SLOAD_RANDOM_GAS_PER_READ;
        let gas = self.costs.limit(input.len(), 0, exec);
        let fee = Self::fee(rng, base_fee);
        let tx = self.build(
            Ty::DynamicFee,
            TxKind::Call(self.addrs.sload_random),
            U256::ZERO,
            input,
            gas,
            AccessList::default(),
            fee,
        );
        self.plan("cold-read", sender, tx)
    }

    /// The reads a SloadRandom transaction with gas limit `limit` makes: as many as its
    /// counted gas allows (the intrinsic gas with 16 per calldata byte, the contract's
    /// setup and loop), less a margin.
    pub(crate) fn sload_reads_for(costs: &Costs, limit: u64) -> u64 {
        let fixed = costs.call_intrinsic + 16 * 5 * 32 + SLOAD_RANDOM_SETUP_GAS + SLOAD_MARGIN;
        limit.saturating_sub(fixed) / SLOAD_RANDOM_GAS_PER_READ
    }

    /// A SloadRandom block: transactions of `SLOAD_RANDOM_TX_GAS` (the last one with the
    /// rest, if at least `MIN_SLOAD_TX_GAS`) until the block gas limit, each reading as
    /// many random filler slots as its gas allows.
    fn plan_sload_block(&mut self, rng: &mut ChaCha8Rng, base_fee: u64) -> Vec<Planned> {
        let mut left = self.config.gas_limit;
        let mut out = Vec::new();
        while left >= MIN_SLOAD_TX_GAS {
            let limit = super::SLOAD_RANDOM_TX_GAS.min(left);
            left -= limit;
            let sender = self.pick_sender(rng);
            let (input, _) = self.sload_call(rng, Self::sload_reads_for(&self.costs, limit));
            let fee = Self::fee(rng, base_fee);
            let tx = self.build(
                Ty::DynamicFee,
                TxKind::Call(self.addrs.sload_random),
                U256::ZERO,
                input,
                limit,
                AccessList::default(),
                fee,
            );
            let mut planned = self.plan("sload-random", sender, tx);
            self.commit(&mut planned);
            out.push(planned);
        }
        out
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
