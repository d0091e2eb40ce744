//! `corral completions SHELL` and `corral man --out-dir DIR`: shell
//! completions and manual pages generated from the same clap definitions
//! as `--help`, so that they never disagree with it.

use std::path::PathBuf;

use crate::CliError;

/// Arguments of `corral completions`.
#[derive(clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

/// Arguments of `corral man`.
#[derive(clap::Args)]
pub(crate) struct ManArgs {
    /// Where to write `corral.1` and one `corral-SUBCOMMAND.1` per
    /// subcommand (made if missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) out_dir: PathBuf,
}

/// Prints the completion script for `args.shell` on stdout.
pub(crate) fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> Result<(), CliError> {
    clap_complete::generate(args.shell, &mut cmd, "corral", &mut std::io::stdout());
    Ok(())
}

/// Writes the manual pages; prints each path written.
pub(crate) fn man(args: ManArgs, cmd: clap::Command) -> Result<(), CliError> {
    let dir = &args.out_dir;
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError(format!("--out-dir {}: {e}", dir.display())))?;
    let mut pages = vec![("corral".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands() {
        let name = format!("corral-{}", sub.get_name());
        pages.push((name.clone(), sub.clone().name(name)));
    }
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut text = Vec::new();
        clap_mangen::Man::new(page).render(&mut text)?;
        std::fs::write(&path, text)
            .map_err(|e| CliError(format!("--out-dir: {}: {e}", path.display())))?;
        println!("{}", path.display());
    }
    Ok(())
}
