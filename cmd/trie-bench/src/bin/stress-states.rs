//! `stress-states FIXTURE.json OUT_DIR`: the state after every block of a
//! `blockchain_test` fixture (e.g. `ethrex fixture stress`'s
//! `stress.blockchain_test.json`) as `ethrex_bintrie::StateSpec` JSON files in OUT_DIR, one
//! path per line on stdout (see `ethrex_trie_bench::stress`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [fixture, out] = args.as_slice() else {
        eprintln!("usage: stress-states FIXTURE.json OUT_DIR");
        return ExitCode::from(64);
    };
    match ethrex_trie_bench::stress::write_states(fixture.as_ref(), out.as_ref()) {
        Ok(files) => {
            for file in files {
                println!("{}", file.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("stress-states: {e:#}");
            ExitCode::FAILURE
        }
    }
}
