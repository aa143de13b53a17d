// bintrie-ref prints the EIP-7864 binary-trie root geth v1.17.10 (trie/bintrie) computes
// for a state description, the reference `check.sh` compares ethrex-bintrie against.
//
// Usage: bintrie-ref [-depth N] STATE.json
//
// STATE.json: {"accounts": [{"address", "nonce", "balance", "code", "storage": {slot: value}}]}
// (quantities as 0x-hex or decimal strings, nonce a number; see ethrex_bintrie::StateSpec).
// Prints one "DEPTH ROOT" line per group depth (1..8, or only N). For each depth the
// trie is built as ethrex's `roots` builds it: the first half of the accounts, Commit,
// the node set flushed into an in-memory node database, NewBinaryTrie reopened from the
// root, the rest of the accounts, Commit.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie/bintrie"
	"github.com/ethereum/go-ethereum/trie/trienode"
	"github.com/ethereum/go-ethereum/triedb/database"
	"github.com/holiman/uint256"
)

type accountJSON struct {
	Address string            `json:"address"`
	Nonce   uint64            `json:"nonce"`
	Balance string            `json:"balance"`
	Code    string            `json:"code"`
	Storage map[string]string `json:"storage"`
}

type stateJSON struct {
	Accounts []accountJSON `json:"accounts"`
}

type account struct {
	address  common.Address
	nonce    uint64
	balance  *uint256.Int
	code     []byte
	codeHash common.Hash
	slots    []common.Hash
	values   []common.Hash
}

// memDB serves committed node blobs by path, the way geth's path-based database does.
type memDB struct {
	nodes map[string][]byte
}

func (db *memDB) NodeReader(common.Hash) (database.NodeReader, error) { return db, nil }

func (db *memDB) Node(_ common.Hash, path []byte, _ common.Hash) ([]byte, error) {
	return db.nodes[string(path)], nil
}

func (db *memDB) flush(set *trienode.NodeSet) {
	if set == nil {
		return
	}
	set.ForEachWithOrder(func(path string, n *trienode.Node) {
		if n.IsDeleted() {
			delete(db.nodes, path)
		} else {
			db.nodes[path] = n.Blob
		}
	})
}

func quantity(s string) (*uint256.Int, error) {
	if s == "" {
		return new(uint256.Int), nil
	}
	b, ok := new(big.Int).SetString(s, 0)
	if !ok || b.Sign() < 0 {
		return nil, fmt.Errorf("bad quantity %q", s)
	}
	v, overflow := uint256.FromBig(b)
	if overflow {
		return nil, fmt.Errorf("quantity %q exceeds 256 bits", s)
	}
	return v, nil
}

func parse(blob []byte) ([]account, error) {
	var state stateJSON
	if err := json.Unmarshal(blob, &state); err != nil {
		return nil, err
	}
	accounts := make([]account, 0, len(state.Accounts))
	for i, a := range state.Accounts {
		if !common.IsHexAddress(a.Address) {
			return nil, fmt.Errorf("account %d: bad address %q", i, a.Address)
		}
		balance, err := quantity(a.Balance)
		if err != nil {
			return nil, fmt.Errorf("account %d balance: %w", i, err)
		}
		var code []byte
		if a.Code != "" {
			if code, err = hexutil.Decode(a.Code); err != nil {
				return nil, fmt.Errorf("account %d code: %w", i, err)
			}
		}
		acc := account{
			address:  common.HexToAddress(a.Address),
			nonce:    a.Nonce,
			balance:  balance,
			code:     code,
			codeHash: crypto.Keccak256Hash(code),
		}
		seen := make(map[common.Hash]bool, len(a.Storage))
		for k, v := range a.Storage {
			slot, err := quantity(k)
			if err != nil {
				return nil, fmt.Errorf("account %d slot: %w", i, err)
			}
			value, err := quantity(v)
			if err != nil {
				return nil, fmt.Errorf("account %d value: %w", i, err)
			}
			key := common.Hash(slot.Bytes32())
			if seen[key] {
				return nil, fmt.Errorf("account %d: slot %s listed twice", i, k)
			}
			seen[key] = true
			acc.slots = append(acc.slots, key)
			acc.values = append(acc.values, common.Hash(value.Bytes32()))
		}
		accounts = append(accounts, acc)
	}
	return accounts, nil
}

// apply writes an account as geth's state commit does for a binary trie.
func apply(tr *bintrie.BinaryTrie, a *account) error {
	state := &types.StateAccount{Nonce: a.nonce, Balance: a.balance, CodeHash: a.codeHash[:]}
	if err := tr.UpdateAccount(a.address, state, len(a.code)); err != nil {
		return err
	}
	if len(a.code) > 0 {
		if err := tr.UpdateContractCode(a.address, a.codeHash, a.code); err != nil {
			return err
		}
	}
	for i := range a.slots {
		if err := tr.UpdateStorage(a.address, a.slots[i][:], a.values[i][:]); err != nil {
			return err
		}
	}
	return nil
}

func root(accounts []account, depth int) (common.Hash, error) {
	db := &memDB{nodes: make(map[string][]byte)}
	half := len(accounts) / 2
	tr, err := bintrie.NewBinaryTrie(common.Hash{}, db, depth)
	if err != nil {
		return common.Hash{}, err
	}
	for i := range accounts[:half] {
		if err := apply(tr, &accounts[i]); err != nil {
			return common.Hash{}, err
		}
	}
	r, set := tr.Commit(false)
	db.flush(set)
	if tr, err = bintrie.NewBinaryTrie(r, db, depth); err != nil {
		return common.Hash{}, fmt.Errorf("reopening %x: %w", r, err)
	}
	for i := range accounts[half:] {
		if err := apply(tr, &accounts[half+i]); err != nil {
			return common.Hash{}, err
		}
	}
	r, set = tr.Commit(false)
	db.flush(set)
	return r, nil
}

func run() error {
	depth := flag.Int("depth", 0, "only this group depth (1..8); 0: all")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: bintrie-ref [-depth N] STATE.json")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		return errors.New("expected one state file")
	}
	if *depth < 0 || *depth > bintrie.MaxGroupDepth {
		return fmt.Errorf("group depth %d not in 1..%d", *depth, bintrie.MaxGroupDepth)
	}
	blob, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		return err
	}
	accounts, err := parse(blob)
	if err != nil {
		return fmt.Errorf("%s: %w", flag.Arg(0), err)
	}
	depths := []int{*depth}
	if *depth == 0 {
		depths = []int{1, 2, 3, 4, 5, 6, 7, 8}
	}
	for _, d := range depths {
		r, err := root(accounts, d)
		if err != nil {
			return fmt.Errorf("depth %d: %w", d, err)
		}
		fmt.Printf("%d %s\n", d, r.Hex())
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bintrie-ref:", err)
		os.Exit(1)
	}
}
