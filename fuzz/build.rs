//! Embeds every preset of the checkout's `presets/` directory (as the
//! `bakeoff` binary does), so that the `flags` target applies flags over
//! the presets users run.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("../presets");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut code = String::from(
        "/// Every preset of `presets/`: (name, text).\npub static PRESETS: &[(&str, &str)] = &[\n",
    );
    for path in &names {
        println!("cargo:rerun-if-changed={}", path.display());
        let stem = path.file_stem().expect("a file").to_string_lossy();
        let abs = path.canonicalize().expect("listed just now");
        writeln!(
            code,
            "    ({stem:?}, include_str!({:?})),",
            abs.display().to_string()
        )
        .expect("a string");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("presets.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
