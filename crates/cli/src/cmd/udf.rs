//! `anduin udf new NAME`: a template project for a library of user-defined functions in
//! WebAssembly — C source, the declarations anduin reads, and a build script that uses
//! Debian's `clang`, `wasm-ld` and `llvm-objcopy` (the Rust toolchain's wasm32 target is not
//! always at hand; clang's is a package away). It writes a new folder and nothing else: it
//! never overwrites, and it builds nothing itself.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Subcommand;

/// Subcommands of `anduin udf`.
#[derive(Subcommand, Debug)]
pub enum UdfCommand {
    /// Write a template project for WebAssembly functions in C into a new folder NAME: the
    /// source, its declarations (functions.txt) and build.sh (clang, wasm-ld, llvm-objcopy),
    /// which builds NAME.wasm for `anduin run … --udf NAME/NAME.wasm`.
    New {
        /// The project's name: its folder's and its module's (letters, digits, `_` and `-`,
        /// starting with a letter).
        name: String,
        /// Where to make the folder.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
}

/// The files of the template, by path in the project (`{{name}}` in a path or a text is the
/// project's name).
const TEMPLATE: [(&str, &str); 5] = [
    ("src/{{name}}.c", include_str!("udf_template/lib.c")),
    ("functions.txt", include_str!("udf_template/functions.txt")),
    ("build.sh", include_str!("udf_template/build.sh")),
    ("README.md", include_str!("udf_template/README.md")),
    (".gitignore", include_str!("udf_template/gitignore")),
];

pub fn udf(command: UdfCommand) -> Result<ExitCode> {
    match command {
        UdfCommand::New { name, dir } => {
            let project = new_project(&dir, &name)?;
            crate::load::print_out(&format!(
                "wrote {}: build it with {}/build.sh (needs clang, wasm-ld and llvm-objcopy: on Debian `apt-get install clang lld llvm`), then `anduin run QUERY --udf {}/{name}.wasm`\n",
                project.display(),
                project.display(),
                project.display(),
            ))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes the template project `name` as a new folder in `dir`; its path.
fn new_project(dir: &Path, name: &str) -> Result<PathBuf> {
    usable_name(name)?;
    // `my_udfs`, not `./my_udfs`, in what is said of it.
    let project = if dir == Path::new(".") {
        PathBuf::from(name)
    } else {
        dir.join(name)
    };
    if project.exists() {
        bail!(
            "`{}` exists already: `anduin udf new` makes a new folder and never overwrites one; give another name or remove it",
            project.display()
        );
    }
    for (path, text) in TEMPLATE {
        let file = project.join(path.replace("{{name}}", name));
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        std::fs::write(&file, text.replace("{{name}}", name))
            .with_context(|| format!("cannot write `{}`", file.display()))?;
    }
    executable(&project.join("build.sh"))?;
    Ok(project)
}

#[cfg(unix)]
fn executable(file: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make `{}` executable", file.display()))
}

#[cfg(not(unix))]
fn executable(_file: &Path) -> Result<()> {
    Ok(())
}

/// A name usable as a folder's, a file's and a C identifier's part everywhere.
fn usable_name(name: &str) -> Result<()> {
    let ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        bail!(
            "\"{name}\" is not a usable project name: letters, digits, `_` and `-`, starting with a letter, at most 64"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_is_written_once_under_its_name_and_a_bad_name_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = new_project(dir.path(), "my_udfs").expect("written");
        let source = std::fs::read_to_string(project.join("src/my_udfs.c")).expect("source");
        assert!(source.starts_with("/* my_udfs: "), "{source}");
        let build = std::fs::read_to_string(project.join("build.sh")).expect("build");
        assert!(
            build.contains("-o build/my_udfs.code.wasm src/my_udfs.c"),
            "{build}"
        );
        assert!(
            !build.contains("{{"),
            "every placeholder is filled: {build}"
        );
        let again = new_project(dir.path(), "my_udfs").expect_err("exists");
        assert!(format!("{again:#}").contains("exists already"), "{again:#}");
        for bad in ["../x", "", "1x", "a b", "a/b"] {
            let e = new_project(dir.path(), bad).expect_err(bad);
            assert!(
                format!("{e:#}").contains("not a usable project name"),
                "{e:#}"
            );
        }
    }
}
