//! Loading the embedded engines' C libraries at run time (dlopen), so that
//! bakeoff builds without their development packages and a machine without
//! one of them runs every other target and says which package is missing.

use libloading::Library;

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
pub fn open(names: &[&str], env: &str, package: &str) -> Result<Lib, String> {
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
    Err(format!(
        "library {} not found; install it with `apt-get install {package}` (Debian package {package})",
        candidates.join(" or ")
    ))
}

/// Looks up symbol `name` as a value of type `T` (a function pointer).
///
/// # Safety
/// `T` must be the exact C signature of the symbol.
pub unsafe fn sym<T: Copy>(lib: &Lib, name: &str) -> Result<T, String> {
    let s: libloading::Symbol<T> = lib
        .lib
        .get(name.as_bytes())
        .map_err(|e| format!("{} has no symbol {name}: {e}", lib.name))?;
    Ok(*s)
}
