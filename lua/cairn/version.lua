--- The version of this plugin: the `cairn` binary it drives must be the same (`:checkhealth
--- cairn` says when it is not). Kept equal to Cargo.toml's by a test (tests/it/plugin_install.rs).
return '0.1.0'
