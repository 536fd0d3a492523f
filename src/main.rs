//! iolens binary: parse the command line, then run the dashboard, batch
//! output, or one of the subcommands.

#![deny(unsafe_code)]

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use iolens::cli::{Cli, Command};

fn main() -> ExitCode {
    // Before any thread starts (see the function).
    iolens::sys::malloc::one_arena();
    // The walk of a job's sources, in a child process (see collect::walk).
    if std::env::args_os().nth(1).is_some_and(|a| a == "__walk") {
        return iolens::collect::walk::child_main(std::env::args_os().nth(2).as_deref());
    }
    let cli = Cli::parse();
    if let Err(e) = iolens::collect::check_root(&cli.root) {
        eprintln!("iolens: {e}");
        return ExitCode::from(2);
    }
    // What a killed iolens left switched on is put back (or said) first.
    if cli.root == std::path::Path::new("/") && !matches!(cli.command, Some(Command::Generate(_))) {
        match iolens::collect::delayacct::recover() {
            Some(Ok(m)) | Some(Err(m)) => eprintln!("iolens: {m}"),
            None => {}
        }
    }
    if cli.cleanup {
        return iolens::collect::trace::instance::cleanup_command();
    }
    let result = match &cli.command {
        Some(Command::BenchSample(args)) => iolens::batch::bench_sample(&cli, args),
        Some(Command::Probe(args)) => iolens::probe::cmd::run(&cli, args),
        Some(Command::Progress(args)) => iolens::batch::progress::run(&cli, args),
        Some(Command::Record(args)) => iolens::record::run(&cli, args),
        Some(Command::Replay(args)) => {
            let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
            if args.batch || args.json || cli.batch || cli.json || !tty {
                iolens::record::replay::run(&cli, args)
            } else {
                iolens::app::run_replay(&cli, args)
            }
        }
        Some(Command::Export(args)) => iolens::export::run(&cli, args),
        Some(Command::Why(args)) => iolens::batch::why::run(&cli, args),
        Some(Command::Generate(args)) => iolens::cli::generate(&args.what, &mut std::io::stdout().lock())
            .map(|()| ExitCode::SUCCESS)
            .map_err(|e| anyhow::anyhow!("writing to stdout: {e}")),
        None => {
            let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
            if cli.batch || cli.json || cli.csv.is_some() || !tty {
                iolens::batch::run(&cli)
            } else {
                iolens::app::run(&cli)
            }
        }
    };
    // Ends by the terminating signal that stopped the run, if one did.
    iolens::stop::finish(match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("iolens: {e:#}");
            ExitCode::from(2)
        }
    })
}
