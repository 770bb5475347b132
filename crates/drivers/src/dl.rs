//! Loading the embedded engines' C libraries at run time (dlopen), so that
//! bakeoff builds without their development packages and a machine without
//! one of them runs every other target and says which package is missing.

use bakeoff_core::error::TargetError;
use libloading::Library;

use bakeoff_core::embedded::EngineError;

/// A loaded C library and the file name it was found under.
pub struct Lib {
    /// The library.
    pub lib: Library,
    /// The name that loaded (e.g. `libtokyocabinet.so.9`).
    pub name: String,
}

/// Loads the first of `names` that exists. `env` names an environment
/// variable that, when set, replaces the list (for tests and unusual
/// installs). The error names the Debian package that provides it.
pub fn open(names: &[&str], env: &str, package: &str) -> Result<Lib, TargetError> {
    let override_name = std::env::var(env).ok();
    let candidates: Vec<String> = match &override_name {
        Some(n) => vec![n.clone()],
        None => names.iter().map(|s| s.to_string()).collect(),
    };
    for name in &candidates {
        // SAFETY: loading a well-known system library whose initialisers
        // have no preconditions.
        if let Ok(lib) = unsafe { Library::new(name) } {
            return Ok(Lib {
                lib,
                name: name.clone(),
            });
        }
    }
    Err(TargetError::NotInstalled {
        what: format!("library {} not found", candidates.join(" or ")),
        package: package.into(),
    })
}

/// Looks up symbol `name` as a value of type `T` (a function pointer).
///
/// # Safety
/// `T` must be the exact C signature of the symbol.
pub unsafe fn sym<T: Copy>(lib: &Lib, name: &str) -> Result<T, EngineError> {
    let s: libloading::Symbol<T> = lib
        .lib
        .get(name.as_bytes())
        .map_err(|e| EngineError(format!("{} has no symbol {name}: {e}", lib.name)))?;
    Ok(*s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A missing library is told apart by its type, and names the package.
    #[test]
    fn a_missing_library_is_not_installed_and_names_its_package() {
        let e = open(
            &["libbakeoff-nosuch.so.0"],
            "BAKEOFF_TEST_NOSUCH_LIB",
            "libnosuch0",
        )
        .err()
        .expect("no such library");
        match &e {
            TargetError::NotInstalled { package, .. } => assert_eq!(package, "libnosuch0"),
            other => panic!("not NotInstalled: {other:?}"),
        }
        assert!(e.to_string().contains("apt-get install libnosuch0"), "{e}");
    }
}
