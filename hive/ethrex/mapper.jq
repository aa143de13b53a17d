# Rewrites the `config` of Hive's /genesis.json from the HIVE_* environment.
#
# Hive describes the chain under test with environment variables (fork blocks,
# fork timestamps, chain id, blob schedule, deposit contract) and ships the
# allocation and header fields in /genesis.json. Every HIVE_* variable that is
# set overrides its config key; when it is unset the input file's value (if
# any) is kept. Numbers and timestamps are written as JSON numbers, which is
# what ethrex's geth-style genesis parser reads. Everything outside `config`
# is passed through unchanged.

def env_str($name):
  env[$name] as $v | if $v == null or $v == "" then null else $v end;

def env_int($name):
  env_str($name) as $v
  | if $v == null then null
    elif ($v | test("^0[xX]")) then
      # hex: fold the digits (tonumber only reads decimal)
      $v[2:] | ascii_downcase | explode
      | reduce .[] as $c (0; . * 16 + (if $c >= 97 then $c - 87 else $c - 48 end))
    else $v | tonumber end;

def env_bool($name):
  env_str($name) as $v
  | if $v == null then null else ($v | ascii_downcase) as $l | ($l == "1" or $l == "true") end;

# [config key, variable]: block-number forks, the merge block and the chain id.
def number_vars: [
  ["chainId", "HIVE_CHAIN_ID"],
  ["homesteadBlock", "HIVE_FORK_HOMESTEAD"],
  ["daoForkBlock", "HIVE_FORK_DAO_BLOCK"],
  ["eip150Block", "HIVE_FORK_TANGERINE"],
  ["eip155Block", "HIVE_FORK_SPURIOUS"],
  ["eip158Block", "HIVE_FORK_SPURIOUS"],
  ["byzantiumBlock", "HIVE_FORK_BYZANTIUM"],
  ["constantinopleBlock", "HIVE_FORK_CONSTANTINOPLE"],
  ["petersburgBlock", "HIVE_FORK_PETERSBURG"],
  ["istanbulBlock", "HIVE_FORK_ISTANBUL"],
  ["muirGlacierBlock", "HIVE_FORK_MUIRGLACIER"],
  ["muirGlacierBlock", "HIVE_FORK_MUIR_GLACIER"],
  ["berlinBlock", "HIVE_FORK_BERLIN"],
  ["londonBlock", "HIVE_FORK_LONDON"],
  ["arrowGlacierBlock", "HIVE_FORK_ARROW_GLACIER"],
  ["grayGlacierBlock", "HIVE_FORK_GRAY_GLACIER"],
  ["mergeNetsplitBlock", "HIVE_MERGE_BLOCK_ID"],
  ["terminalTotalDifficulty", "HIVE_TERMINAL_TOTAL_DIFFICULTY"]
];

# Timestamp forks that have a blob schedule entry, in activation order.
def blob_forks: ["cancun", "prague", "osaka", "bpo1", "bpo2", "bpo3", "bpo4", "bpo5", "amsterdam"];

# [config key, variable]: timestamp forks.
def time_vars:
  [["shanghaiTime", "HIVE_SHANGHAI_TIMESTAMP"]]
  + [blob_forks[] | ["\(.)Time", "HIVE_\(ascii_upcase)_TIMESTAMP"]];

# Mainnet values, used when neither Hive nor the input file gives one.
def blob_defaults: {
  cancun:    {target: 3,  max: 6,  baseFeeUpdateFraction: 3338477},
  prague:    {target: 6,  max: 9,  baseFeeUpdateFraction: 5007716},
  osaka:     {target: 6,  max: 9,  baseFeeUpdateFraction: 5007716},
  bpo1:      {target: 10, max: 15, baseFeeUpdateFraction: 8346193},
  bpo2:      {target: 14, max: 21, baseFeeUpdateFraction: 11684671},
  amsterdam: {target: 14, max: 21, baseFeeUpdateFraction: 11684671}
};

def set_from_env($pairs):
  reduce $pairs[] as $p (.; env_int($p[1]) as $v | if $v == null then . else .[$p[0]] = $v end);

# Blob parameters for every fork that is scheduled in the config.
def blob_schedule:
  . as $cfg
  | ($cfg.blobSchedule // {}) as $given
  | reduce blob_forks[] as $f ($given;
      if $cfg["\($f)Time"] == null then .
      else
        ($f | ascii_upcase) as $F
        | {
            target: (env_int("HIVE_\($F)_BLOB_TARGET") // $given[$f].target // blob_defaults[$f].target),
            max: (env_int("HIVE_\($F)_BLOB_MAX") // $given[$f].max // blob_defaults[$f].max),
            baseFeeUpdateFraction: (env_int("HIVE_\($F)_BLOB_BASE_FEE_UPDATE_FRACTION")
                                    // $given[$f].baseFeeUpdateFraction
                                    // blob_defaults[$f].baseFeeUpdateFraction)
          } as $entry
        | if ($entry | [.[]] | any(. == null)) then . else .[$f] = $entry end
      end);

.config = (
  (.config // {})
  | set_from_env(number_vars)
  | set_from_env(time_vars)
  | if env_bool("HIVE_TERMINAL_TOTAL_DIFFICULTY_PASSED") != null then
      .terminalTotalDifficultyPassed = env_bool("HIVE_TERMINAL_TOTAL_DIFFICULTY_PASSED")
    elif .terminalTotalDifficulty == 0 then
      .terminalTotalDifficultyPassed = true
    else . end
  | .depositContractAddress = (env_str("HIVE_DEPOSIT_CONTRACT_ADDRESS")
                               // .depositContractAddress
                               // "0x00000000219ab540356cBB839Cbe05303d7705Fa")
  | .blobSchedule = blob_schedule
  | if .blobSchedule == {} then del(.blobSchedule) else . end
)
