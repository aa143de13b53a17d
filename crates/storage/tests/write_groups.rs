//! Write groups: the batches of a group are visible to reads at once and reach the
//! database as one write.

use alloy_primitives::{Address, U256};
use ethrex_storage::memory::MemoryBackend;
use ethrex_storage::{KvBackend, Store, Table, WriteBatch};
use std::sync::Arc;

fn slot_batch(address: Address, slot: u64, value: u8) -> WriteBatch {
    let mut key = address.to_vec();
    key.extend_from_slice(&U256::from(slot).to_be_bytes::<32>());
    let mut batch = WriteBatch::new();
    batch.put(Table::Storage, key, vec![value]);
    batch
}

#[test]
fn a_write_group_is_visible_at_once_and_written_as_one() {
    let backend = Arc::new(MemoryBackend::new());
    let store = Store::new(backend.clone());
    let a = Address::repeat_byte(0xaa);
    store.write(slot_batch(a, 0, 1)).unwrap();
    store.flush().unwrap();
    store.take_write_times();

    store.begin_group();
    for slot in 1..=3u64 {
        store.write(slot_batch(a, slot, slot as u8 + 1)).unwrap();
    }
    // Overwrite inside the group: the later value wins, before and after the merge.
    store.write(slot_batch(a, 2, 9)).unwrap();
    store.flush().unwrap();
    assert_eq!(store.storage(&a, &U256::from(3)).unwrap(), U256::from(4));
    let mut key = a.to_vec();
    key.extend_from_slice(&U256::from(3).to_be_bytes::<32>());
    assert_eq!(backend.get(Table::Storage, &key).unwrap(), None, "a held batch reached the disk");
    assert!(store.take_write_times().is_empty());

    store.end_group().unwrap();
    assert_eq!(store.storage(&a, &U256::from(2)).unwrap(), U256::from(9));
    store.flush().unwrap();
    assert_eq!(store.take_write_times().len(), 1, "the group took one write");
    assert_eq!(backend.get(Table::Storage, &key).unwrap(), Some(vec![4]));
    let mut key2 = a.to_vec();
    key2.extend_from_slice(&U256::from(2).to_be_bytes::<32>());
    assert_eq!(backend.get(Table::Storage, &key2).unwrap(), Some(vec![9]));
    // No group open: writes go one by one again.
    store.end_group().unwrap();
    store.write(slot_batch(a, 4, 5)).unwrap();
    store.flush().unwrap();
    assert_eq!(store.take_write_times().len(), 1);
}
