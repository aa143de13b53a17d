//! `ethrex node --dev`: a one-node chain at the newest fork (Amsterdam) with the 20
//! accounts of the standard test mnemonic prefunded (as anvil's, hardhat's and reth's dev
//! chains have them), producing a block from its pool every `--dev.period` seconds, or
//! as soon as a transaction arrives with a period of 0.

use alloy_primitives::{Address, U256};
use alloy_signer_local::{coins_bip39::English, MnemonicBuilder};
use ethrex_common::{ChainConfig, Fork};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The standard test mnemonic.
pub(crate) const MNEMONIC: &str = "test test test test test test test test test test test junk";
/// How many of its accounts (m/44'/60'/0'/0/i) are funded.
const ACCOUNTS: u32 = 20;
/// Each account's balance: 10,000 ether.
const BALANCE_ETH: u64 = 10_000;
/// The dev chain's id (geth's and anvil's dev chains use 1337).
pub(crate) const CHAIN_ID: u64 = 1337;
/// How often a zero period looks at the pool.
const POLL: Duration = Duration::from_millis(50);

/// The mnemonic's first `ACCOUNTS` addresses.
pub(crate) fn accounts() -> anyhow::Result<Vec<Address>> {
    (0..ACCOUNTS)
        .map(|i| {
            let signer =
                MnemonicBuilder::<English>::default().phrase(MNEMONIC).index(i)?.build()?;
            Ok(signer.address())
        })
        .collect()
}

/// The dev chain's genesis: every fork to Amsterdam from block 0, the system contracts,
/// the funded accounts, a 60M gas limit and a 1 gwei base fee.
pub(crate) fn genesis() -> anyhow::Result<alloy_genesis::Genesis> {
    use alloy_eips::eip7840::BlobParams;
    let mut config = ChainConfig::all_forks_at_genesis(CHAIN_ID, Fork::Amsterdam);
    let schedule = &mut config.inner.blob_schedule;
    schedule.insert("cancun".into(), BlobParams::cancun());
    schedule.insert("prague".into(), BlobParams::prague());
    schedule.insert("osaka".into(), BlobParams::osaka());
    schedule.insert("amsterdam".into(), BlobParams::bpo2());
    let mut alloc: BTreeMap<Address, alloy_genesis::GenesisAccount> = BTreeMap::new();
    for (address, account) in ethrex_blockchain::system_contracts::system_contracts() {
        let storage = account.storage.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        let entry = alloy_genesis::GenesisAccount::default()
            .with_nonce(Some(account.nonce))
            .with_balance(account.balance)
            .with_code(Some(account.code))
            .with_storage(Some(storage));
        alloc.insert(address, entry);
    }
    let balance = U256::from(BALANCE_ETH) * U256::from(10u64).pow(U256::from(18));
    for address in accounts()? {
        alloc.insert(address, alloy_genesis::GenesisAccount::default().with_balance(balance));
    }
    Ok(alloy_genesis::Genesis {
        config: config.inner,
        gas_limit: 60_000_000,
        base_fee_per_gas: Some(1_000_000_000),
        alloc,
        ..Default::default()
    })
}

/// Produces blocks until the runtime stops: one every `period` seconds, or, with a zero
/// period, one whenever the pool holds a transaction a block can take.
pub(crate) async fn produce(node: Arc<ethrex_rpc::Node>, period: u64, fee_recipient: Address) {
    loop {
        if period == 0 {
            tokio::time::sleep(POLL).await;
            let waiting = node.clone();
            let pending = tokio::task::spawn_blocking(move || waiting.has_pending_transactions());
            if !pending.await.unwrap_or(false) {
                continue;
            }
        } else {
            tokio::time::sleep(Duration::from_secs(period)).await;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let node = node.clone();
        let made =
            tokio::task::spawn_blocking(move || node.produce_block(now, fee_recipient)).await;
        match made {
            Ok(Ok((hash, txs))) => tracing::info!(%hash, txs, "dev block"),
            Ok(Err(e)) => tracing::error!(error = %e, "dev block not produced"),
            Err(e) => tracing::error!(error = %e, "dev block producer failed"),
        }
    }
}
