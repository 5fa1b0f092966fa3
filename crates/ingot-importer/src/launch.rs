//! The launch configuration, `__ingot__/launch.json`: what the launcher runs, and how. Defined
//! once, here, for both sides: the launcher reads it with [`LaunchConfig::parse`]; the build
//! writes it with [`canonical_json`] (`ingot._ingot.launch_config_json`), which refuses a
//! configuration the launcher would not read back as it was given.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use ingot_format::names::LAUNCH_CONFIG_VERSION;

/// `__ingot__/launch.json`. The optional fields are kept as given (absent, or a value), so that
/// the build writes back exactly the keys it was given.
#[derive(Debug, Deserialize, Serialize, PartialEq)]
pub struct LaunchConfig {
    pub version: u32,
    pub run: Run,
    /// Exit without finalizing the interpreter when the application is done (see the launcher's
    /// README, "Exit"); absent: yes ([`LaunchConfig::fast_exit`]).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub fast_exit: Option<bool>,
    /// Keep importlib's path finder (after the archive's) and the standard path hooks (after
    /// the archive's), so that the application can import modules from directories it puts on
    /// `sys.path`, as under python. `false` (`--no-filesystem-imports`): the archive alone.
    /// Absent: yes ([`LaunchConfig::filesystem_imports`]).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub filesystem_imports: Option<bool>,
    /// Let a process the application started from its own executable run a python command line
    /// (`-c`, `-m`, multiprocessing's spawn; see the launcher's README, "Self-calls"). `false`
    /// (`--no-python-mode`, for an executable that is a privilege boundary): never, every start
    /// runs the application. Absent: yes ([`LaunchConfig::python_mode`]).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub python_mode: Option<bool>,
    /// Which runtime the executable carries (`ingot inspect` shows it). The launcher ignores it,
    /// whatever it is (anything but a string reads as absent, and the build refuses it).
    #[serde(
        default,
        deserialize_with = "text_or_nothing",
        skip_serializing_if = "Option::is_none"
    )]
    pub runtime: Option<String>,
}

/// What to run.
#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Run {
    /// Import `module` and call `module.function()`; its result is the exit status.
    Function { module: String, function: String },
    /// `python -m module`.
    Module { module: String },
}

/// What is wrong with a launch configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("version {found} is not supported (this launcher reads version {supported})", supported = LAUNCH_CONFIG_VERSION)]
    Version { found: u32 },
    #[error("`{name}` is not a Python name")]
    NotAName { name: String },
    /// For the build: a JSON error, with the line of the written configuration it is at.
    #[error("{source}: `{line}`")]
    JsonAt { source: serde_json::Error, line: String },
    /// For the build: a key the launcher would not read back as given (a key it does not know,
    /// or a value it reads as absent).
    #[error("the launcher would not read `{key}`: {value}")]
    NotRead { key: String, value: String },
}

/// An optional field's value: present means a value of its type (`null` is refused, as it was
/// before the field was optional).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
    bool::deserialize(deserializer).map(Some)
}

/// A string, or nothing for any other value (for a key the launcher ignores).
fn text_or_nothing<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum TextOrNot {
        Text(String),
        Other(serde::de::IgnoredAny),
    }
    Ok(match TextOrNot::deserialize(deserializer)? {
        TextOrNot::Text(text) => Some(text),
        TextOrNot::Other(_) => None,
    })
}

impl LaunchConfig {
    /// Reads a launch configuration (JSON); unknown keys are ignored.
    pub fn parse(bytes: &[u8]) -> Result<LaunchConfig, ConfigError> {
        let config: LaunchConfig = serde_json::from_slice(bytes)?;
        if config.version != LAUNCH_CONFIG_VERSION {
            return Err(ConfigError::Version { found: config.version });
        }
        let names: Vec<&str> = match &config.run {
            Run::Function { module, function } => vec![module.as_str(), function.as_str()],
            Run::Module { module } => vec![module.as_str()],
        };
        for name in names {
            if name.is_empty() || name.split('.').any(str::is_empty) {
                return Err(ConfigError::NotAName { name: name.to_string() });
            }
        }
        Ok(config)
    }

    /// Whether to exit without finalizing the interpreter (absent: yes).
    pub fn fast_exit(&self) -> bool {
        self.fast_exit.unwrap_or(true)
    }

    /// Whether self-calls may run python command lines (absent: yes).
    pub fn python_mode(&self) -> bool {
        self.python_mode.unwrap_or(true)
    }

    /// Whether the application may import from directories on `sys.path` (absent: yes).
    pub fn filesystem_imports(&self) -> bool {
        self.filesystem_imports.unwrap_or(true)
    }
}

/// The launch configuration `config` as the build writes it: JSON with the keys sorted, indented
/// by 2 spaces, non-ASCII escaped, and a final newline: byte for byte what Python's
/// `json.dumps(config, indent=2, sort_keys=True) + "\n"` gives. An error if the launcher would
/// not read it ([`LaunchConfig::parse`]), or would not read it back as given (see
/// [`ConfigError::NotRead`]: what the launcher reads, written again, must be `config`).
pub fn canonical_json(config: &Value) -> Result<Vec<u8>, ConfigError> {
    let mut text = python_json(config);
    let parsed = LaunchConfig::parse(text.as_bytes()).map_err(|error| match error {
        ConfigError::Json(source) if source.line() > 0 => {
            let line = text.lines().nth(source.line() - 1).unwrap_or_default().trim();
            // A key's line names it; a brace would say nothing.
            if line.contains(':') {
                ConfigError::JsonAt { source, line: line.to_string() }
            } else {
                ConfigError::Json(source)
            }
        }
        error => error,
    })?;
    let read_back = serde_json::to_value(&parsed)?;
    if let Some((key, value)) = not_read_back(config, &read_back, "") {
        return Err(ConfigError::NotRead { key, value: python_json(value).trim_end().to_string() });
    }
    text.push('\n');
    Ok(text.into_bytes())
}

/// The first key (dotted path, in sorted order) of `given` that `read_back` lacks or holds
/// otherwise, with its value in `given`.
fn not_read_back<'a>(
    given: &'a Value,
    read_back: &Value,
    path: &str,
) -> Option<(String, &'a Value)> {
    let (Value::Object(given), Value::Object(read_back)) = (given, read_back) else {
        return (given != read_back).then(|| (path.to_string(), given));
    };
    let mut keys: Vec<&String> = given.keys().collect();
    keys.sort();
    keys.into_iter().find_map(|key| {
        let value = &given[key];
        let path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
        match read_back.get(key) {
            None => Some((path, value)),
            Some(back) => not_read_back(value, back, &path),
        }
    })
}

/// `json.dumps(value, indent=2, sort_keys=True)` as Python writes it (`ensure_ascii`), without a
/// final newline. Numbers are written as serde_json writes them: Python's for integers (a launch
/// configuration has no other numbers: [`LaunchConfig::parse`] refuses them).
pub fn python_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, 0, &mut out);
    out
}

fn write_json(value: &Value, level: usize, out: &mut String) {
    let indent = |out: &mut String, level: usize| out.extend(std::iter::repeat_n("  ", level));
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::String(text) => write_string(text, out),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                out.push_str(if index == 0 { "\n" } else { ",\n" });
                indent(out, level + 1);
                write_json(item, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0)); // code point order, as Python sorts str
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                out.push_str(if index == 0 { "\n" } else { ",\n" });
                indent(out, level + 1);
                write_string(key, out);
                out.push_str(": ");
                write_json(item, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
    }
}

/// A JSON string as Python's `ensure_ascii` writes it: printable ASCII as it is, but for `"` and
/// `\`; `\n`, `\r`, `\t`, `\b`, `\f` short; anything else `\u` and 4 lowercase hex digits (UTF-16,
/// so a surrogate pair above U+FFFF).
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for char in text.chars() {
        match char {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(char),
            _ => {
                let mut units = [0u16; 2];
                for unit in char.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// `launch_config_json(config: dict[str, object]) -> bytes`: `config` as the build writes
/// `__ingot__/launch.json` ([`canonical_json`]: what `(json.dumps(config, indent=2,
/// sort_keys=True) + "\n").encode()` gives). ValueError, naming the key or value, if the launcher
/// would not read it as given, or if it is not JSON (keys not str, values not None, bool, int,
/// float, str, list, tuple or dict).
#[cfg(feature = "writer")]
#[pyo3::pyfunction]
pub fn launch_config_json<'py>(
    config: &pyo3::Bound<'py, pyo3::types::PyDict>,
) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::types::PyBytes>> {
    use ingot_format::names::LAUNCH_CONFIG;
    let value = python::json_value(config.as_any(), "")?;
    let bytes = canonical_json(&value).map_err(|error| {
        pyo3::exceptions::PyValueError::new_err(format!("{LAUNCH_CONFIG}: {error}"))
    })?;
    Ok(pyo3::types::PyBytes::new(config.py(), &bytes))
}

#[cfg(feature = "writer")]
mod python {
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;
    use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
    use serde_json::{Map, Number, Value};

    /// A Python object as JSON (as `json.dumps` takes it); `path` names where it is, for errors.
    pub(super) fn json_value(object: &Bound<'_, PyAny>, path: &str) -> PyResult<Value> {
        let refuse = |why: String| {
            let at =
                if path.is_empty() { "the configuration".to_string() } else { format!("`{path}`") };
            PyValueError::new_err(format!("{}: {at}: {why}", ingot_format::names::LAUNCH_CONFIG))
        };
        if object.is_none() {
            return Ok(Value::Null);
        }
        if let Ok(value) = object.cast::<PyBool>() {
            return Ok(Value::Bool(value.is_true()));
        }
        if object.is_instance_of::<PyInt>() {
            if let Ok(value) = object.extract::<i64>() {
                return Ok(Value::from(value));
            }
            return object
                .extract::<u64>()
                .map(Value::from)
                .map_err(|_| refuse(format!("{object} is too large")));
        }
        if let Ok(value) = object.cast::<PyFloat>() {
            return Number::from_f64(value.value())
                .map(Value::Number)
                .ok_or_else(|| refuse(format!("{object} is not a JSON number")));
        }
        if let Ok(text) = object.cast::<PyString>() {
            let Ok(text) = text.to_str() else {
                return Err(refuse(format!("{} is not UTF-8", object.repr()?)));
            };
            return Ok(Value::String(text.to_string()));
        }
        if let Ok(dict) = object.cast::<PyDict>() {
            let mut map = Map::new();
            for (key, item) in dict.iter() {
                let Ok(text) = key.cast::<PyString>() else {
                    return Err(refuse(format!("the key {} is not a str", key.repr()?)));
                };
                let Ok(key) = text.to_str().map(str::to_string) else {
                    return Err(refuse(format!("the key {} is not UTF-8", key.repr()?)));
                };
                let inner = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                map.insert(key, json_value(&item, &inner)?);
            }
            return Ok(Value::Object(map));
        }
        if object.is_instance_of::<PyList>() || object.is_instance_of::<PyTuple>() {
            let items = object
                .try_iter()?
                .enumerate()
                .map(|(index, item)| json_value(&item?, &format!("{path}[{index}]")));
            return items.collect::<PyResult<Vec<Value>>>().map(Value::Array);
        }
        Err(refuse(format!("an object of type {} is not JSON", object.get_type().name()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn launch_config() {
        let config = LaunchConfig::parse(br#"{"version": 1, "run": {"kind": "function", "module": "app.cli", "function": "main"}}"#).unwrap();
        assert_eq!(config.run, Run::Function { module: "app.cli".into(), function: "main".into() });
        assert!(config.fast_exit());
        assert!(config.filesystem_imports());
        assert!(config.python_mode());
        let config = LaunchConfig::parse(
            br#"{"version": 1, "run": {"kind": "module", "module": "app"}, "fast_exit": false, "filesystem_imports": false, "python_mode": false}"#,
        )
        .unwrap();
        assert_eq!(config.run, Run::Module { module: "app".into() });
        assert!(!config.fast_exit());
        assert!(!config.filesystem_imports());
        assert!(!config.python_mode());
        assert!(LaunchConfig::parse(
            br#"{"version": 2, "run": {"kind": "module", "module": "app"}}"#
        )
        .is_err());
        assert!(LaunchConfig::parse(
            br#"{"version": 1, "run": {"kind": "script", "module": "app"}}"#
        )
        .is_err());
        assert!(LaunchConfig::parse(
            br#"{"version": 1, "run": {"kind": "module", "module": "a..b"}}"#
        )
        .is_err());
        assert!(LaunchConfig::parse(b"not json").is_err());
    }

    #[test]
    fn the_launcher_reads_what_it_read_before() {
        let module = r#""run": {"kind": "module", "module": "app"}"#;
        let parse = |rest: &str| {
            LaunchConfig::parse(format!(r#"{{"version": 1, {module}{rest}}}"#).as_bytes())
        };
        // Unknown keys are ignored, and so is `runtime`, whatever it is.
        assert!(parse(r#", "future": [1, 2]"#).is_ok());
        assert_eq!(parse(r#", "runtime": 5"#).unwrap().runtime, None);
        assert_eq!(parse(r#", "runtime": "r1""#).unwrap().runtime.as_deref(), Some("r1"));
        // `null` is not a boolean.
        assert!(parse(r#", "fast_exit": null"#).is_err());
        assert!(parse(r#", "filesystem_imports": null"#).is_err());
        assert!(parse(r#", "python_mode": null"#).is_err());
        assert!(parse(r#", "fast_exit": 1"#).is_err());
    }

    #[test]
    fn round_trip() {
        let configs = [
            json!({"version": 1, "run": {"kind": "function", "module": "hello", "function": "main"}}),
            json!({"version": 1, "run": {"kind": "module", "module": "app"}, "fast_exit": true}),
            json!({
                "version": 1,
                "run": {"kind": "module", "module": "caf\u{e9}.\u{1d49c}"},
                "fast_exit": false,
                "filesystem_imports": false,
                "python_mode": false,
                "runtime": "cpython-3.11 \"glibc\"\t\u{7f}",
            }),
        ];
        for config in configs {
            let bytes = canonical_json(&config).unwrap();
            let parsed = LaunchConfig::parse(&bytes).unwrap();
            assert_eq!(serde_json::to_value(&parsed).unwrap(), config);
            assert_eq!(canonical_json(&serde_json::to_value(&parsed).unwrap()).unwrap(), bytes);
            assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), config);
            assert!(bytes.is_ascii() && bytes.ends_with(b"}\n"));
        }
    }

    #[test]
    fn written_as_python_writes_it() {
        let config = json!({
            "version": 1,
            "run": {"module": "caf\u{e9}", "kind": "function", "function": "main"},
            "runtime": "\u{1d49c}\u{7f}\"\\\n\u{1}",
            "fast_exit": true,
        });
        let expected = concat!(
            "{\n",
            "  \"fast_exit\": true,\n",
            "  \"run\": {\n",
            "    \"function\": \"main\",\n",
            "    \"kind\": \"function\",\n",
            "    \"module\": \"caf\\u00e9\"\n",
            "  },\n",
            "  \"runtime\": \"\\ud835\\udc9c\\u007f\\\"\\\\\\n\\u0001\",\n",
            "  \"version\": 1\n",
            "}\n",
        );
        assert_eq!(String::from_utf8(canonical_json(&config).unwrap()).unwrap(), expected);
        assert_eq!(
            python_json(&json!({"a": [], "b": {}, "c": [1, null]})),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    null\n  ]\n}"
        );
    }

    #[test]
    fn the_build_refuses_what_the_launcher_would_not_read() {
        let refused = |config: Value| canonical_json(&config).unwrap_err().to_string();
        let run = json!({"kind": "module", "module": "app"});
        assert_eq!(
            refused(json!({"version": 1, "run": run, "fast_exits": false})),
            "the launcher would not read `fast_exits`: false"
        );
        assert_eq!(
            refused(
                json!({"version": 1, "run": {"kind": "module", "module": "app", "function": "main"}})
            ),
            "the launcher would not read `run.function`: \"main\""
        );
        assert_eq!(
            refused(json!({"version": 1, "run": run, "runtime": 5})),
            "the launcher would not read `runtime`: 5"
        );
        assert_eq!(
            refused(json!({"version": 1, "run": run, "runtime": null})),
            "the launcher would not read `runtime`: null"
        );
        let message = refused(json!({"version": 1, "run": run, "fast_exit": "yes"}));
        assert!(
            message.starts_with("invalid type: string \"yes\", expected a boolean"),
            "{message}"
        );
        assert!(message.ends_with(": `\"fast_exit\": \"yes\",`"), "{message}");
        assert!(refused(json!({"version": 1, "run": run, "fast_exit": null}))
            .contains("`\"fast_exit\": null,`"));
        assert!(refused(json!({"run": run})).contains("missing field `version`"));
        assert!(
            refused(json!({"version": 2, "run": run})).starts_with("version 2 is not supported")
        );
        assert_eq!(
            refused(json!({"version": 1, "run": {"kind": "module", "module": "a..b"}})),
            "`a..b` is not a Python name"
        );
        assert!(refused(json!({"version": 1, "run": {"kind": "script", "module": "a"}}))
            .contains("unknown variant `script`"));
        assert!(refused(json!({"version": 1.0, "run": run})).contains("expected u32"));
        assert!(refused(json!([1])).contains("expected struct LaunchConfig"));
    }
}
