//! The CLI explains itself (issue 25): an incomplete command prints the usage with its
//! subcommands, not one line; `--help` names one default per option; `keys create` says which
//! store the key went to.

use email_verdict_tests::TestDir;
use email_verdict_tests::sidecar::run_raw;

#[test]
fn incomplete_commands_print_the_usage_and_the_subcommands() {
    let dir = TestDir::new("cli-usage");
    for (args, subcommands) in [
        (&[][..], &["serve", "keys", "check", "review"][..]),
        (&["keys"][..], &["create", "list", "revoke"][..]),
        (&["review"][..], &["list", "set", "clear", "history"][..]),
    ] {
        let out = run_raw(dir.path(), args);
        out.expect_code(2, "an incomplete command is a usage error");
        assert!(out.stderr.contains("Usage: email-verdict"), "{args:?}\n{out}");
        for sub in subcommands {
            assert!(out.stderr.lines().any(|l| l.trim_start().starts_with(sub)), "{args:?} lists {sub}\n{out}");
        }
    }
}

#[test]
fn review_set_help_names_one_default_for_the_reviewer() {
    let dir = TestDir::new("cli-help");
    let out = run_raw(dir.path(), &["review", "set", "--help"]);
    out.expect_code(0, "--help");
    let line = out.stdout.lines().skip_while(|l| !l.contains("--reviewer")).take(2).collect::<Vec<_>>().join(" ");
    assert_eq!(line.matches("default").count(), 1, "{line}\n{out}");
    assert!(!line.contains("env:"), "{line}");
}

#[test]
fn keys_create_says_which_store_it_wrote_to() {
    let dir = TestDir::new("cli-store");
    let out = run_raw(dir.path(), &["keys", "create", "--plan", "pro", "--name", "my-app"]);
    out.expect_code(0, "keys create");
    assert!(out.stdout.contains("in sqlite:email-verdict.db;"), "{out}");
    let state = format!("sqlite:{}", dir.join("other.db").display());
    let out = run_raw(dir.path(), &["keys", "create", "--plan", "pro", "--state", &state]);
    assert!(out.stdout.contains(&format!("in {state};")), "{out}");
    // A store URL's password never shows.
    let out = run_raw(dir.path(), &["keys", "create", "--plan", "pro", "--state", "redis://:s3cret@127.0.0.1:1/0"]);
    assert!(!format!("{}{}", out.stdout, out.stderr).contains("s3cret"), "{out}");
}
