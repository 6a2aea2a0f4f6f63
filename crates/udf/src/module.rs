//! Loading a module: compiled once, checked for imports, its declarations read.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use wasmtime::{Config, Engine, ExternType, Module};

use crate::abi::{same, show_wasm};
use crate::{Declaration, Limits, UdfError, WasmFunction};

/// The custom section in which a module declares its functions, one a line
/// ([`Declaration::parse`]).
pub const DECLARATIONS_SECTION: &str = "anduin:functions";

/// A compiled WebAssembly module. Cheap to clone.
#[derive(Clone)]
pub struct WasmModule {
    pub(crate) label: Arc<str>,
    pub(crate) module: Module,
    declared: Arc<[Declaration]>,
    /// The aggregates of its `anduin:aggregates` section.
    pub(crate) declared_aggregates: Arc<[Declaration]>,
    /// The operators of its `anduin:operators` section.
    pub(crate) declared_operators: Arc<[crate::OperatorDeclaration]>,
}

impl std::fmt::Debug for WasmModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmModule")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// How often the engine's epoch advances: the grain of the wall-clock backstop.
pub(crate) const EPOCH_TICK: std::time::Duration = std::time::Duration::from_millis(100);

/// The wall-clock backstop of one call ([`Limits::backstop`]) in epoch ticks, at least one:
/// fuel is the limit, deterministic; this stops what fuel does not count (a bulk memory
/// instruction is one unit whatever its size).
pub(crate) fn backstop_ticks(limits: Limits) -> u64 {
    let ticks = limits.backstop.as_nanos().div_ceil(EPOCH_TICK.as_nanos());
    u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
}

/// The one engine of the process: every module compiled by it, with fuel metering and epoch
/// interruption on (a thread of its own advances the epoch every [`EPOCH_TICK`]).
pub(crate) fn engine() -> Result<&'static Engine, UdfError> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.consume_fuel(true);
            config.epoch_interruption(true);
            let engine = Engine::new(&config).map_err(|e| format!("{e:#}"))?;
            let ticking = engine.clone();
            std::thread::Builder::new()
                .name("anduin-udf-epoch".into())
                .spawn(move || loop {
                    // A clock, not a synchronisation: it only bounds how long a call may run.
                    std::thread::sleep(EPOCH_TICK);
                    ticking.increment_epoch();
                })
                .map_err(|e| format!("cannot start the UDF epoch thread: {e}"))?;
            Ok(engine)
        })
        .as_ref()
        .map_err(|e| UdfError::Engine(e.clone()))
}

impl WasmModule {
    /// Reads and compiles the module at `path`: a binary module (`.wasm`), or one in the
    /// WebAssembly text format (`.wat`), which is translated first.
    pub fn load(path: &Path) -> Result<WasmModule, UdfError> {
        let label = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| UdfError::Read {
            module: label.clone(),
            message: e.to_string(),
        })?;
        if bytes.starts_with(b"\0asm") {
            return Self::from_binary(&label, &bytes);
        }
        let script = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "js" | "mjs" | "cjs"));
        if script {
            return Err(UdfError::Invalid {
                module: label,
                message: "it is a JavaScript file, and a module given to `--udf` or a `.flow` \
                          `udf` block must be WebAssembly (`.wasm`, or `.wat` text); functions, \
                          aggregates and operators in JavaScript are declared in SQL, with their \
                          body: `CREATE FUNCTION f(…) RETURNS … LANGUAGE javascript AS $$ … $$`"
                    .to_string(),
            });
        }
        let binary = wat::parse_bytes(&bytes).map_err(|e| UdfError::Invalid {
            module: label.clone(),
            message: e.to_string(),
        })?;
        Self::from_binary(&label, &binary)
    }

    /// Compiles `bytes`, calling the module `label` in errors.
    pub fn from_binary(label: &str, bytes: &[u8]) -> Result<WasmModule, UdfError> {
        let module = Module::from_binary(engine()?, bytes).map_err(|e| UdfError::Invalid {
            module: label.to_string(),
            message: format!("{e:#}"),
        })?;
        if let Some(import) = module.imports().next() {
            return Err(UdfError::Import {
                module: label.to_string(),
                import: format!("{}.{}", import.module(), import.name()),
            });
        }
        Ok(WasmModule {
            label: label.into(),
            module,
            declared: declarations(bytes, label, DECLARATIONS_SECTION)?.into(),
            declared_aggregates: declarations(bytes, label, crate::AGGREGATES_SECTION)?.into(),
            declared_operators: section(bytes, label, crate::OPERATORS_SECTION)?
                .iter()
                .map(|t| crate::OperatorDeclaration::parse_all(t))
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .flatten()
                .collect(),
        })
    }

    /// What the module is called in errors (its path).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The functions the module declares in its [`DECLARATIONS_SECTION`] (none without
    /// the section).
    pub fn declared(&self) -> &[Declaration] {
        &self.declared
    }

    /// Every function the module declares in its [`DECLARATIONS_SECTION`], checked
    /// against its exports; an error if it declares no function nor aggregate.
    pub fn declared_functions(&self, limits: Limits) -> Result<Vec<WasmFunction>, UdfError> {
        if self.declared.is_empty()
            && self.declared_aggregates.is_empty()
            && self.declared_operators.is_empty()
        {
            return Err(UdfError::Invalid {
                module: self.label.to_string(),
                message: format!(
                    "it declares no function: list them in a custom section `{DECLARATIONS_SECTION}` (aggregates in `{}`, operators in `{}`), one `name(TYPE, …) -> TYPE` a line, or declare them with CREATE FUNCTION (CREATE AGGREGATE)", crate::AGGREGATES_SECTION, crate::OPERATORS_SECTION
                ),
            });
        }
        self.declared
            .iter()
            .map(|d| self.function(d.clone(), limits))
            .collect()
    }

    /// The function `declaration` declares, checked against the module's export of that
    /// name: its WebAssembly type must be what the ABI maps the declaration to, a
    /// function that passes strings needs the module's `memory`, `alloc` and `dealloc`, and
    /// the module must instantiate within `limits` (its start function returning, its
    /// memory and tables starting within the limits: [`UdfError::Instantiate`]).
    pub fn function(
        &self,
        declaration: Declaration,
        limits: Limits,
    ) -> Result<WasmFunction, UdfError> {
        let found = self.func_type(&declaration.name);
        let Some(found) = found else {
            let known: Vec<String> = self
                .module
                .exports()
                .filter(|e| matches!(e.ty(), ExternType::Func(_)))
                .map(|e| e.name().to_string())
                .collect();
            return Err(UdfError::NoExport {
                module: self.label.to_string(),
                function: declaration.name,
                known: if known.is_empty() {
                    String::new()
                } else {
                    format!(": it exports {}", known.join(", "))
                },
            });
        };
        let params: Vec<_> = declaration
            .args
            .iter()
            .flat_map(|a| a.params().iter().cloned())
            .collect();
        let results = [declaration.result.result()];
        let (found_params, found_results) = found;
        if !same(&params, &found_params) || !same(&results, &found_results) {
            let args: Vec<String> = declaration.args.iter().map(ToString::to_string).collect();
            return Err(UdfError::Signature {
                function: declaration.name.clone(),
                module: self.label.to_string(),
                declared: format!("({}) RETURNS {}", args.join(", "), declaration.result),
                expected: show_wasm(&params, &results),
                found: show_wasm(&found_params, &found_results),
            });
        }
        if declaration.uses_strings() {
            self.check_string_abi(&declaration.name)?;
        }
        WasmFunction::new(self.clone(), declaration, limits)
    }

    pub(crate) fn func_type(
        &self,
        name: &str,
    ) -> Option<(Vec<wasmtime::ValType>, Vec<wasmtime::ValType>)> {
        match self.module.get_export(name)? {
            ExternType::Func(f) => Some((f.params().collect(), f.results().collect())),
            _ => None,
        }
    }

    fn check_string_abi(&self, function: &str) -> Result<(), UdfError> {
        let missing = self.missing_memory_abi();
        if missing.is_empty() {
            return Ok(());
        }
        Err(UdfError::MissingAbiExport {
            function: function.to_string(),
            module: self.label.to_string(),
            missing: missing.join(" and "),
        })
    }

    /// What the module lacks of `memory`, `alloc` and `dealloc`, as the ABI names them.
    pub(crate) fn missing_memory_abi(&self) -> Vec<&'static str> {
        use wasmtime::ValType::I32;
        let mut missing = Vec::new();
        if !matches!(
            self.module.get_export("memory"),
            Some(ExternType::Memory(_))
        ) {
            missing.push("its `memory`");
        }
        match self.func_type("alloc") {
            Some((p, r)) if same(&p, &[I32]) && same(&r, &[I32]) => {}
            _ => missing.push("`alloc(len: i32) -> i32`"),
        }
        match self.func_type("dealloc") {
            Some((p, r)) if same(&p, &[I32, I32]) && r.is_empty() => {}
            _ => missing.push("`dealloc(ptr: i32, len: i32)`"),
        }
        missing
    }
}

/// The declarations in the custom sections `name` of module binary `bytes`.
fn declarations(bytes: &[u8], label: &str, name: &str) -> Result<Vec<Declaration>, UdfError> {
    let mut out = Vec::new();
    for text in section(bytes, label, name)? {
        out.extend(Declaration::parse_all(&text)?);
    }
    Ok(out)
}

/// The text of each custom section `name` of module binary `bytes`.
fn section(bytes: &[u8], label: &str, name: &str) -> Result<Vec<String>, UdfError> {
    let mut out = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| UdfError::Invalid {
            module: label.to_string(),
            message: e.to_string(),
        })?;
        if let wasmparser::Payload::CustomSection(section) = payload {
            if section.name() == name {
                let text = std::str::from_utf8(section.data()).map_err(|_| UdfError::Invalid {
                    module: label.to_string(),
                    message: format!("its `{name}` section is not UTF-8"),
                })?;
                out.push(text.to_string());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_javascript_file_given_as_a_module_is_refused_saying_where_javascript_goes() {
        let path = std::env::temp_dir().join(format!("anduin-udf-{}.mjs", std::process::id()));
        std::fs::write(&path, "export function f(x) { return x; }\n").expect("a file");
        let err = WasmModule::load(&path).expect_err("not WebAssembly");
        let _ = std::fs::remove_file(&path);
        let said = err.to_string();
        assert!(
            said.contains("it is a JavaScript file") && said.contains("LANGUAGE javascript"),
            "{said}"
        );
    }
}
