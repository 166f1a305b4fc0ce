//! The security policy: Read is always allowed; Act (writes and agent runs) is denied in
//! `readonly` (the caller's client entry's level when it sets one, else `[autonomy].level`) and
//! limited by `max_actions_per_hour` in a sliding window; control writes (ingest, reindex) are
//! denied in `readonly`. A call outside a client's set is a denial too. The window lives in the
//! daemon's state, so it spans every session and transport and survives config reloads.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openhuman_config::{AutonomyLevel, Config};

const WINDOW: Duration = Duration::from_secs(3600);

/// Why the policy refused an Act call. Its text (what clients and audit rows see) starts with
/// [`Denial::PREFIX`] and says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Denial {
    #[error(
        "[policy-blocked] the autonomy level is readonly, so writes and agent runs are refused; \
         set [autonomy].level = \"supervised\" (or OPENHUMAN_AUTONOMY_LEVEL) to allow them"
    )]
    Readonly,
    #[error(
        "[policy-blocked] rate limit reached: {used} act calls in the last hour (max_actions_per_hour = {max}); \
         retry in {retry_secs} s or raise [autonomy].max_actions_per_hour"
    )]
    RateLimited { used: usize, max: usize, retry_secs: u64 },
    /// The caller's client entry sets `level = "readonly"`.
    #[error(
        "[policy-blocked] the client entry [{entry}] sets level = \"readonly\" for this client, so its writes \
         and agent runs are refused; change `{entry}.level` in config.toml to allow them"
    )]
    ClientReadonly { entry: String },
    /// The tool, resource or prompt is not in the tool set of the caller's client entry.
    #[error(
        "[policy-blocked] {kind} `{name}` is outside the set of this client: the client entry [{entry}] (matched \
         by {by}) does not allow it; list it in `{entry}.{allow_key}` (and not in `{entry}.{deny_key}`) in \
         config.toml to allow it"
    )]
    OutsideSet {
        kind: &'static str,
        name: String,
        entry: String,
        by: String,
        allow_key: &'static str,
        deny_key: &'static str,
    },
}

/// The autonomy level a caller's calls run under: its client entry's (`entry`, as
/// `clients.<name>`), else `[autonomy].level`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Level {
    pub level: AutonomyLevel,
    pub entry: Option<String>,
}

impl Level {
    /// `[autonomy].level` of `config`, for callers no client entry sets a level for.
    pub(crate) fn global(config: &Config) -> Level {
        Level { level: config.autonomy.level, entry: None }
    }
}

impl Denial {
    /// How every denial's text begins, in replies and in stored audit rows.
    pub(crate) const PREFIX: &str = "[policy-blocked]";

    /// Whether a stored error text (an audit row's) records a policy denial.
    pub(crate) fn is_denial_text(text: &str) -> bool {
        text.starts_with(Denial::PREFIX)
    }
}

#[derive(Default)]
pub(crate) struct ActLimiter {
    recent: Mutex<VecDeque<Instant>>,
}

impl ActLimiter {
    /// Admits one Act call under `config`, or says why not; an admitted call uses a slot.
    /// `elsewhere` act calls other daemons sharing the memory made in the last hour count
    /// against the same budget.
    pub(crate) fn admit_shared(&self, config: &Config, elsewhere: usize) -> Result<(), Denial> {
        self.admit_at(config, Instant::now(), elsewhere)
    }

    /// [`ActLimiter::admit_shared`] at the caller's `level` (its client entry's, when it sets
    /// one) instead of `[autonomy].level`; the hourly budget is the one of every caller.
    pub(crate) fn admit_at_level(&self, config: &Config, level: &Level, elsewhere: usize) -> Result<(), Denial> {
        if level.level == AutonomyLevel::Readonly {
            return Err(match &level.entry {
                Some(entry) => Denial::ClientReadonly { entry: entry.clone() },
                None => Denial::Readonly,
            });
        }
        self.window(config, Instant::now(), elsewhere)
    }

    /// Admits a control write (`openhuman.memory_ingest`, `memory_import`, `memory_reindex`): refused in
    /// `readonly`, not counted against the hourly act budget (the user's own commands use them,
    /// and one ingest of many files is one call).
    pub(crate) fn admit_control(&self, config: &Config) -> Result<(), Denial> {
        if config.autonomy.level == AutonomyLevel::Readonly {
            return Err(Denial::Readonly);
        }
        Ok(())
    }

    fn admit_at(&self, config: &Config, now: Instant, elsewhere: usize) -> Result<(), Denial> {
        let a = &config.autonomy;
        if a.level == AutonomyLevel::Readonly {
            return Err(Denial::Readonly);
        }
        self.window(config, now, elsewhere)
    }

    /// The sliding hour: one more act call, or the rate-limit denial.
    fn window(&self, config: &Config, now: Instant, elsewhere: usize) -> Result<(), Denial> {
        let a = &config.autonomy;
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        while recent.front().is_some_and(|t| now.duration_since(*t) >= WINDOW) {
            recent.pop_front();
        }
        let max = a.max_actions_per_hour as usize;
        let used = recent.len() + elsewhere;
        if used >= max {
            // Another daemon's calls age out on their own clock: a minute is an honest guess.
            let retry_secs =
                recent.front().map(|t| WINDOW.saturating_sub(now.duration_since(*t)).as_secs() + 1).unwrap_or(60);
            return Err(Denial::RateLimited { used, max, retry_secs });
        }
        recent.push_back(now);
        Ok(())
    }

    /// Act calls counted in the current window.
    pub(crate) fn used(&self) -> usize {
        let now = Instant::now();
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent.iter().filter(|t| now.duration_since(**t) < WINDOW).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(level: AutonomyLevel, max: u32) -> Config {
        let mut c = Config::default();
        c.autonomy.level = level;
        c.autonomy.max_actions_per_hour = max;
        c
    }

    #[test]
    fn readonly_denies_with_policy_prefix() {
        let l = ActLimiter::default();
        let e = l.admit_shared(&config(AutonomyLevel::Readonly, 100), 0).unwrap_err();
        assert_eq!(e, Denial::Readonly);
        let text = e.to_string();
        assert!(Denial::is_denial_text(&text) && text.contains("[autonomy].level"), "{text}");
        assert_eq!(l.used(), 0, "a denied call uses no slot");
    }

    #[test]
    fn a_client_level_replaces_the_global_one() {
        let l = ActLimiter::default();
        let entry = Level { level: AutonomyLevel::Readonly, entry: Some("clients.cursor".into()) };
        let e = l.admit_at_level(&config(AutonomyLevel::Full, 100), &entry, 0).unwrap_err();
        let text = e.to_string();
        assert!(Denial::is_denial_text(&text) && text.contains("`clients.cursor.level`"), "{text}");
        let writer = Level { level: AutonomyLevel::Supervised, entry: Some("clients.agent".into()) };
        l.admit_at_level(&config(AutonomyLevel::Readonly, 100), &writer, 0).unwrap();
        assert_eq!(l.used(), 1, "an admitted call counts against the one budget");
        let global = Level::global(&config(AutonomyLevel::Readonly, 100));
        assert_eq!(l.admit_at_level(&config(AutonomyLevel::Readonly, 100), &global, 0), Err(Denial::Readonly));
    }

    #[test]
    fn sliding_window_limits_and_frees_slots() {
        let l = ActLimiter::default();
        let c = config(AutonomyLevel::Supervised, 3);
        let t0 = Instant::now();
        for i in 0..3 {
            l.admit_at(&c, t0 + Duration::from_secs(i * 60), 0).unwrap();
        }
        let e = l.admit_at(&c, t0 + Duration::from_secs(600), 0).unwrap_err();
        assert!(matches!(e, Denial::RateLimited { used: 3, max: 3, .. }), "{e:?}");
        let text = e.to_string();
        assert!(text.starts_with("[policy-blocked] rate limit") && text.contains("max_actions_per_hour = 3"), "{text}");
        // The first slot frees an hour after it was used.
        l.admit_at(&c, t0 + Duration::from_secs(3600), 0).unwrap();
        assert!(l.admit_at(&c, t0 + Duration::from_secs(3601), 0).is_err());
        // A raised limit (a reload) applies to the same window.
        l.admit_at(&config(AutonomyLevel::Full, 10), t0 + Duration::from_secs(3602), 0).unwrap();
    }
}
