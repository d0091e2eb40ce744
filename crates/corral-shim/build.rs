//! Links the shim as small as a preload can be, since every exec under
//! `corral run` maps and relocates it: no C start files (their weak
//! symbols are four more lookups at every load and nothing here needs
//! them) and code and data in fewer segments.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-nostartfiles");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,noseparate-code");
}
