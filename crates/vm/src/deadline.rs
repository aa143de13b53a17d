//! A time limit on the EVM work of one request, as geth bounds `eth_call`,
//! `eth_estimateGas`, `eth_simulateV1` (`--rpc.evmtimeout`, 5 s) and each traced
//! transaction (the tracer option `timeout`, 5 s by default).
//!
//! The gas cap bounds a call's steps, not its time: a call that reads cold storage on an
//! old block (each read reverting change sets) or runs under the struct logger can take
//! far longer per gas than a block does. [`DeadlineInspector`] looks at the clock every
//! [`CHECK_EVERY`] steps; once the deadline has passed it halts every frame at its next
//! step, so the transaction unwinds at once and the caller reports the timeout instead of
//! the (meaningless) result.

use revm::inspector::Inspector;
use revm::interpreter::{InstructionResult, Interpreter, InterpreterTypes};
use std::time::{Duration, Instant};

/// geth's default limit on a call's (and a traced transaction's) EVM time.
pub const DEFAULT_EVM_TIMEOUT: Duration = Duration::from_secs(5);

/// How many steps run between two looks at the clock (a look costs tens of
/// nanoseconds; 256 steps take a microsecond or more).
const CHECK_EVERY: u32 = 256;

/// The moment a request's EVM work must stop, and the limit it came from (for the error).
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Option<Instant>,
    limit: Duration,
}

impl Deadline {
    /// `limit` from now; a zero limit means none (geth's `--rpc.evmtimeout 0`).
    pub fn after(limit: Duration) -> Self {
        let at = (!limit.is_zero()).then(|| Instant::now() + limit);
        Self { at, limit }
    }

    /// No limit.
    pub fn none() -> Self {
        Self { at: None, limit: Duration::ZERO }
    }

    /// The limit this deadline was set with.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// Whether the deadline has passed.
    pub fn passed(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// The inspector that enforces this deadline on one EVM run.
    pub fn inspector(&self) -> DeadlineInspector {
        DeadlineInspector { deadline: *self, steps: 0, hit: false }
    }
}

impl Default for Deadline {
    /// [`DEFAULT_EVM_TIMEOUT`] from now.
    fn default() -> Self {
        Self::after(DEFAULT_EVM_TIMEOUT)
    }
}

/// Halts the EVM once its [`Deadline`] has passed; [`DeadlineInspector::hit`] tells the
/// caller the run was cut short.
#[derive(Debug, Clone)]
pub struct DeadlineInspector {
    deadline: Deadline,
    steps: u32,
    hit: bool,
}

impl DeadlineInspector {
    /// Whether the run was halted by the deadline.
    pub fn hit(&self) -> bool {
        self.hit
    }
}

impl<CTX, INTR: InterpreterTypes> Inspector<CTX, INTR> for DeadlineInspector {
    #[inline]
    fn step(&mut self, interp: &mut Interpreter<INTR>, _context: &mut CTX) {
        if !self.hit {
            self.steps = self.steps.wrapping_add(1);
            if !self.steps.is_multiple_of(CHECK_EVERY) || !self.deadline.passed() {
                return;
            }
            self.hit = true;
        }
        // Every frame, the ones below included, stops at its next step.
        interp.halt(InstructionResult::OutOfGas);
    }
}

/// A duration in Go's notation (`"5s"`, `"300ms"`, `"1m30s"`, `"1.5h"`), as geth's
/// tracer option `timeout` takes it. By hand: the duration crates read other notations
/// (spaces, long unit names) and refuse Go's fractions and `µs`, and the option is
/// geth's.
///
/// # Errors
/// geth's message for a string Go cannot read (`time: invalid duration "..."`).
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.starts_with('-') {
        // A negative timeout means "already passed" in Go; no tracer run can use it.
        return Err(invalid());
    }
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len =
            rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        rest = &rest[unit_len..];
        total += value * seconds;
    }
    Duration::try_from_secs_f64(total).map_err(|_| invalid())
}

/// `d` as Go prints a duration (`5s`, `300ms`, `1m30s`), for geth's error messages.
pub fn go_duration(d: Duration) -> String {
    fn decimal(whole: u128, frac: u128, digits: u32) -> String {
        let frac = format!("{frac:0width$}", width = digits as usize);
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{frac}")
        }
    }
    let ns = d.as_nanos();
    if ns == 0 {
        return "0s".into();
    }
    if ns < 1_000 {
        return format!("{ns}ns");
    }
    if ns < 1_000_000 {
        return format!("{}µs", decimal(ns / 1_000, ns % 1_000, 3));
    }
    if ns < 1_000_000_000 {
        return format!("{}ms", decimal(ns / 1_000_000, ns % 1_000_000, 6));
    }
    let (hours, rest) = (ns / 3_600_000_000_000, ns % 3_600_000_000_000);
    let (minutes, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let seconds = decimal(rest / 1_000_000_000, rest % 1_000_000_000, 9);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, m) => format!("{m}m{seconds}s"),
        (h, m) => format!("{h}h{m}m{seconds}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_read_as_go_reads_them() {
        let ms = Duration::from_millis;
        assert_eq!(parse_go_duration("5s"), Ok(ms(5_000)));
        assert_eq!(parse_go_duration("300ms"), Ok(ms(300)));
        assert_eq!(parse_go_duration("1m30s"), Ok(ms(90_000)));
        assert_eq!(parse_go_duration("1.5h"), Ok(ms(5_400_000)));
        assert_eq!(parse_go_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "5", "s", "5x", "1..5s", "-1s", "5 s"] {
            assert_eq!(
                parse_go_duration(bad),
                Err(format!("time: invalid duration {bad:?}")),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        let ms = Duration::from_millis;
        assert_eq!(go_duration(ms(5_000)), "5s");
        assert_eq!(go_duration(ms(300)), "300ms");
        assert_eq!(go_duration(ms(90_500)), "1m30.5s");
        assert_eq!(go_duration(ms(3_600_000)), "1h0m0s");
        assert_eq!(go_duration(Duration::from_micros(1_500)), "1.5ms");
        assert_eq!(go_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn a_zero_limit_never_passes_and_a_past_one_has() {
        assert!(!Deadline::after(Duration::ZERO).passed());
        assert!(!Deadline::none().passed());
        let past = Deadline { at: Some(Instant::now()), limit: Duration::from_millis(1) };
        std::thread::sleep(Duration::from_millis(2));
        assert!(past.passed());
    }
}
