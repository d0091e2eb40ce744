//! One-line errors: which flag, which value, what is allowed.

use std::fmt;

/// An error the user can act on, printed as one line after `error: `.
#[derive(Debug)]
pub struct CliError(pub String);

impl CliError {
    /// A bad value for `flag`: names the flag, the value, and what is allowed.
    pub fn bad_value(flag: &str, value: &str, allowed: &str) -> Self {
        CliError(format!("{flag}: invalid value '{value}': {allowed}"))
    }

    /// `--seconds` of a simulation: positive and finite.
    pub fn check_sim_seconds(seconds: f64) -> Result<(), Self> {
        if seconds > 0.0 && seconds.is_finite() {
            return Ok(());
        }
        Err(CliError::bad_value(
            "--seconds",
            &seconds.to_string(),
            "expected a positive number of simulated seconds",
        ))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError(e.to_string())
    }
}

/// A configuration variable's error as is: it names the variable. `corral
/// run` names its own flag instead (see `RunArgs::config`).
impl From<corral_runtime::config::ConfigError> for CliError {
    fn from(e: corral_runtime::config::ConfigError) -> Self {
        CliError(e.to_string())
    }
}

/// Writing a report as JSON.
impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> Self {
        CliError(e.to_string())
    }
}
