//! A service's configuration, layered defaults ← TOML file ←
//! `BATTLELOG_<SERVICE>_*` environment ← flags, with figment.
//!
//! A service declares its keys once, as the fields of its `Config` struct
//! (serde, `#[serde(default, deny_unknown_fields)]`, with a `Default`).
//! Everything else follows from that struct: the file's keys are its field
//! names, the environment variable of `data_dir` is
//! `BATTLELOG_<SERVICE>_DATA_DIR`, and the flag is `--data-dir`
//! ([`CommandLine::parse`] adds one flag per key). Adding a key is adding a
//! field (and its default), with a doc comment: the struct derives
//! `schemars::JsonSchema` too, and [`reference()`] reads each key's
//! description from it for `docs/config.md` (written again with
//! `BATTLELOG_WRITE_DOCS=1 cargo test -p battlelog-cli --bin battlelog
//! config_doc`).
//!
//! The environment and the flags are text; a key that wants a number or a
//! boolean reads it from that text (figment's lossy extraction), and a list
//! (`auth_keys`) is comma-separated there ([`comma_separated`]). A value that
//! does not fit its key, or a key the service does not know, is an error
//! naming the key and the layer it came from. A key the service does not
//! know can only be in the file: variables with the service's prefix that
//! name no key are not config (`BATTLELOG_<SERVICE>_CONFIG`, the roller's
//! `BATTLELOG_ROLLER_MASTER_KEY`) and are left alone, as before.

use std::path::{Path, PathBuf};

use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};
use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};

/// A configuration that cannot be used. Names the file or the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A value that does not fit its key, or a key that does not exist,
    /// in the layer `origin` (the file, an environment variable, a flag).
    #[error("invalid config {key}: {message} (from {origin})")]
    Value { key: String, origin: String, message: String },
    #[error("invalid config {key}: {message}")]
    Invalid { key: &'static str, message: String },
}

/// The layers of one service's configuration, read by [`Layers::extract`].
#[derive(Debug, Clone, Default)]
pub struct Layers {
    /// `BATTLELOG_<SERVICE>_`: the prefix of the service's variables.
    env_prefix: String,
    file: Option<PathBuf>,
    /// Every variable given; only the prefixed ones naming a key are read.
    env: Vec<(String, String)>,
    /// `(key, value)` of each flag given.
    flags: Vec<(String, String)>,
}

impl Layers {
    /// No file, no environment, no flags: the defaults alone. `service` is
    /// the lowercase name, e.g. `journal`.
    pub fn new(service: &str) -> Self {
        Self { env_prefix: format!("BATTLELOG_{}_", service.to_ascii_uppercase()), ..Self::default() }
    }

    /// The layers a service binary was started with: its command line and
    /// this process's environment.
    pub fn from_process(service: &str, command_line: CommandLine) -> Self {
        // A variable that is not Unicode cannot name a key or hold a path we
        // print: skipped, as clap skipped it.
        let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        Self::new(service).file(command_line.file).env(env).flags(command_line.flags)
    }

    /// The TOML file layer.
    pub fn file(mut self, path: Option<PathBuf>) -> Self {
        self.file = path;
        self
    }

    /// The environment layer: variables as `std::env::vars` gives them.
    pub fn env(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = vars.into_iter().collect();
        self
    }

    /// The flag layer: `(key, value)` pairs, e.g. `("data_dir", "/srv")`.
    pub fn flags(mut self, flags: impl IntoIterator<Item = (String, String)>) -> Self {
        self.flags = flags.into_iter().collect();
        self
    }

    /// The configuration `T` these layers make, checked by `validate`: a
    /// service's `Config::load` when it has nothing to tidy in between.
    pub fn load<T: Serialize + DeserializeOwned + Default>(
        &self,
        validate: impl FnOnce(&T) -> Result<(), ConfigError>,
    ) -> Result<T, ConfigError> {
        let config = self.extract()?;
        validate(&config)?;
        Ok(config)
    }

    /// The configuration `T` these layers make, unvalidated: defaults, then
    /// the file, then the environment, then the flags.
    pub fn extract<T: Serialize + DeserializeOwned + Default>(&self) -> Result<T, ConfigError> {
        let keys = keys::<T>();
        let mut figment = Figment::new();
        if let Some(path) = &self.file {
            figment = figment.merge(file_layer(path)?);
        }
        let env = self.env.iter().filter_map(|(name, value)| {
            let key = name.strip_prefix(&self.env_prefix)?.to_ascii_lowercase();
            keys.contains(&key).then(|| (key, value.clone()))
        });
        let prefix = self.env_prefix.clone();
        let env = NamedLayer::new(env, "the environment", move |key| format!("{prefix}{}", key.to_ascii_uppercase()));
        let flags =
            NamedLayer::new(self.flags.iter().cloned(), "the flags", |key| format!("--{}", key.replace('_', "-")));
        // The defaults are the bottom layer, not left to `#[serde(default)]`:
        // serde fills a flattened section's missing keys from the section's
        // own default, which cannot know the service's (its `listen` port).
        let defaults = match Value::serialize(T::default()) {
            Ok(Value::Dict(_, dict)) => dict,
            _ => Dict::new(),
        };
        let defaults = NamedLayer { values: defaults, metadata: Metadata::named("the defaults") };
        let figment = Figment::new().merge(defaults).merge(figment).merge(env).merge(flags);
        figment.extract_lossy().map_err(|e| value_error::<T>(&figment, e, self.file.as_deref()))
    }
}

/// The keys of `T`: the fields of its default value, flattened ones too.
pub fn keys<T: Serialize + Default>() -> Vec<String> {
    match Value::serialize(T::default()) {
        Ok(Value::Dict(_, dict)) => dict.into_keys().collect(),
        // A config is a struct of named fields: nothing else is a service's.
        _ => Vec::new(),
    }
}

/// The file layer: the TOML file read with `toml` (figment's own TOML
/// support brings an older `toml`), its syntax errors reported as before.
fn file_layer(path: &Path) -> Result<NamedLayer, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
    let parse_error = |message: String| ConfigError::Parse { path: path.to_owned(), message };
    let table: toml::Table = toml::from_str(&text).map_err(|e| parse_error(e.message().to_owned()))?;
    let values = match Value::serialize(table) {
        Ok(Value::Dict(_, dict)) => dict,
        Ok(_) => return Err(parse_error("is not a table of keys".into())),
        Err(e) => return Err(parse_error(e.to_string())),
    };
    let shown = format!("config file {}", path.display());
    let metadata = Metadata::named(shown.clone()).interpolater(move |_: &Profile, _: &[&str]| shown.clone());
    Ok(NamedLayer { values, metadata })
}

/// One layer as a figment provider, named so that errors say where a value
/// came from: the file, or the variable or flag of the key.
struct NamedLayer {
    values: Dict,
    metadata: Metadata,
}

impl NamedLayer {
    /// Values given as text, under `what` ("the environment"); `name_of`
    /// turns a key into what the operator typed (its variable or flag).
    fn new(
        values: impl IntoIterator<Item = (String, String)>,
        what: &'static str,
        name_of: impl Fn(&str) -> String + Clone + Send + Sync + 'static,
    ) -> Self {
        let values = values.into_iter().map(|(key, value)| (key, Value::from(value))).collect();
        let metadata = Metadata::named(what).interpolater(move |_: &Profile, path: &[&str]| name_of(&path.join(".")));
        Self { values, metadata }
    }
}

impl Provider for NamedLayer {
    fn metadata(&self) -> Metadata {
        self.metadata.clone()
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        Ok(Profile::Default.collect(self.values.clone()))
    }
}

/// The first error of extracting `T` from `figment`, as [`ConfigError::Value`].
fn value_error<T: DeserializeOwned>(figment: &Figment, error: figment::Error, file: Option<&Path>) -> ConfigError {
    // serde says "unknown field" as a plain message when the struct has
    // flattened fields, as every service's config has (the TLS keys).
    let unknown = match &error.kind {
        figment::error::Kind::UnknownField(key, _) => Some(key.clone()),
        figment::error::Kind::Message(message) => {
            message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`')).map(|(key, _)| key.to_owned())
        }
        _ => None,
    };
    let message = match (&unknown, &error.kind) {
        (Some(key), _) => format!("unknown key `{key}`"),
        (None, kind) => kind.to_string(),
    };
    if let Some(key) = unknown {
        // Only the file can hold a key the service does not know: the
        // environment and flag layers take known keys only.
        let origin = file.map_or_else(|| "the config file".into(), |path| format!("config file {}", path.display()));
        return ConfigError::Value { key, origin, message };
    }
    // serde also loses the key of a value inside a flattened struct.
    let Some(key) = error.path.last().cloned().or_else(|| culprit::<T>(figment)) else {
        return ConfigError::Value { key: "(unknown)".into(), origin: "the configuration".into(), message };
    };
    let origin = match figment.find_metadata(&key) {
        // Its variable or flag, or the file's name.
        Some(metadata) => metadata.interpolate(&Profile::Default, &[key.as_str()]),
        None => "the configuration".into(),
    };
    ConfigError::Value { key, origin, message }
}

/// The key whose value alone keeps `T` from being extracted: the one whose
/// removal (leaving its default) makes the extraction succeed. Only asked
/// for after a failure, and a config has a few dozen keys at most.
fn culprit<T: DeserializeOwned>(figment: &Figment) -> Option<String> {
    let data = Provider::data(figment).ok()?;
    let values = data.get(&Profile::Default)?;
    let fits_without = |key: &&String| {
        let mut without = values.clone();
        without.remove(*key);
        Figment::from(figment::providers::Serialized::defaults(without)).extract_lossy::<T>().is_ok()
    };
    values.keys().find(fits_without).cloned()
}

/// A service binary's command line: `--config FILE` (or
/// `BATTLELOG_<SERVICE>_CONFIG`) and one flag per config key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandLine {
    /// The TOML file, if one was given.
    pub file: Option<PathBuf>,
    /// `(key, value)` of every key flag given.
    pub flags: Vec<(String, String)>,
}

impl CommandLine {
    /// `command` (the binary's name, version and about) with `--config` and
    /// one `--<key>` flag per key of `T`.
    pub fn command<T: Serialize + Default>(service: &str, command: clap::Command) -> clap::Command {
        let upper = service.to_ascii_uppercase();
        let config = clap::Arg::new("config")
            .long("config")
            .env(format!("BATTLELOG_{upper}_CONFIG"))
            .value_name("FILE")
            .value_parser(clap::value_parser!(PathBuf))
            .help(format!(
                "TOML config file (keys as in docs/config.md); flags and BATTLELOG_{upper}_* variables override it"
            ));
        command.arg(config).args(keys::<T>().into_iter().map(|key| {
            let help = format!("Config key `{key}` (over BATTLELOG_{upper}_{})", key.to_ascii_uppercase());
            clap::Arg::new(key.clone()).long(key.replace('_', "-")).value_name("VALUE").help(help)
        }))
    }

    /// Parses this process's arguments with [`Self::command`], exiting with
    /// clap's message on a bad one (and printing `--help` or `--version`).
    pub fn parse<T: Serialize + Default>(service: &str, command: clap::Command) -> Self {
        Self::from_matches::<T>(&Self::command::<T>(service, command).get_matches())
    }

    /// The file and the key flags given in `matches`.
    pub fn from_matches<T: Serialize + Default>(matches: &clap::ArgMatches) -> Self {
        let file = matches.get_one::<PathBuf>("config").cloned();
        let flags = keys::<T>()
            .into_iter()
            .filter_map(|key| {
                let value = matches.get_one::<String>(&key)?.clone();
                Some((key, value))
            })
            .collect();
        Self { file, flags }
    }
}

/// One key of a service's configuration as an operator meets it: the
/// reference `docs/config.md` is written from (the `battlelog` CLI's
/// `config_doc` test). Every part comes from the config type itself, so a
/// key added to it is in the reference when the reference is written again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyReference {
    /// The key as the file names it: `data_dir`.
    pub key: String,
    /// Its environment variable: `BATTLELOG_JOURNAL_DATA_DIR`.
    pub env: String,
    /// Its flag, as [`CommandLine::command`] declares it: `--data-dir`.
    pub flag: String,
    /// Its default as TOML would write it (`"data/journal"`, `1024`, `[]`);
    /// None: unset by default.
    pub default: Option<String>,
    /// Its doc comment, on one line, with the values an enum key takes.
    pub description: String,
    /// A table (the webhooks' `tenants`): given in the file only, since the
    /// environment and the flags hold text.
    pub file_only: bool,
}

/// The environment variable of `key` in `service`'s configuration, the one
/// [`Layers::extract`] reads: `BATTLELOG_<SERVICE>_<KEY>`.
pub fn env_var(service: &str, key: &str) -> String {
    format!("BATTLELOG_{}_{}", service.to_ascii_uppercase(), key.to_ascii_uppercase())
}

/// Every key of `T`, `service`'s configuration, in the order of
/// [`keys`]: its variable, its flag, its default and its description
/// (the field's doc comment, through `T`'s JSON Schema).
pub fn reference<T: Serialize + Default + schemars::JsonSchema>(service: &str) -> Vec<KeyReference> {
    let defaults = match Value::serialize(T::default()) {
        Ok(Value::Dict(_, dict)) => dict,
        _ => Dict::new(),
    };
    let command = CommandLine::command::<T>(service, clap::Command::new(service.to_owned()));
    let schema = schemars::schema_for!(T);
    keys::<T>()
        .into_iter()
        .map(|key| {
            let flag = command
                .get_arguments()
                .find(|arg| arg.get_id() == key.as_str())
                .and_then(clap::Arg::get_long)
                .map(|long| format!("--{long}"))
                .unwrap_or_default();
            let default = defaults.get(&key).and_then(toml_text);
            let file_only = matches!(defaults.get(&key), Some(Value::Dict(..)));
            let description = describe(&schema, &key);
            KeyReference { env: env_var(service, &key), flag, default, description, file_only, key }
        })
        .collect()
}

/// A default value as it would be written in the TOML file; None for an
/// unset option.
fn toml_text(value: &Value) -> Option<String> {
    if let Value::Empty(..) = value {
        return None;
    }
    let value = toml::Value::try_from(value).ok()?;
    Some(value.to_string())
}

/// The description of `key` in `schema`: its doc comment, else the doc of
/// its type (a key without one of its own, e.g. `log_format`), on one line;
/// then the values an enum takes.
fn describe(schema: &schemars::Schema, key: &str) -> String {
    let Some(property) = schema.get("properties").and_then(|properties| properties.get(key)) else {
        return String::new();
    };
    // A type of its own (an enum, a table) is a definition the key refers to.
    let definition = property
        .get("$ref")
        .and_then(|reference| reference.as_str())
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .and_then(|name| schema.get("$defs")?.get(name));
    let text_of = |schema: &serde_json::Value| {
        let parts = ["title", "description"].map(|part| schema.get(part).and_then(|text| text.as_str()));
        parts.into_iter().flatten().collect::<Vec<_>>().join(". ")
    };
    let mut text = text_of(property);
    if text.is_empty()
        && let Some(definition) = definition
    {
        text = text_of(definition);
    }
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let choices: Vec<String> = definition
        .and_then(|definition| definition.get("oneOf").or_else(|| definition.get("enum")))
        .and_then(|choices| choices.as_array())
        .map(|choices| {
            choices
                .iter()
                .filter_map(|choice| choice.get("const").unwrap_or(choice).as_str())
                .map(|choice| format!("`{choice}`"))
                .collect()
        })
        .unwrap_or_default();
    if !choices.is_empty() {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&format!("One of {}.", choices.join(", ")));
    }
    text
}

/// For `#[serde(deserialize_with)]` on a list of paths: a list in the file,
/// or text separated by commas (`a.pem,b.pem`) in the environment or a flag.
pub fn comma_separated<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<PathBuf>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<PathBuf>),
        Text(String),
    }
    match OneOrMany::deserialize(deserializer) {
        Ok(OneOrMany::Many(paths)) => Ok(paths),
        Ok(OneOrMany::Text(text)) => Ok(text.split(',').filter(|p| !p.is_empty()).map(PathBuf::from).collect()),
        Err(_) => Err(de::Error::custom("expected a list of paths, or paths separated by commas")),
    }
}

/// For `#[serde(deserialize_with)]` on a number inside a flattened section
/// (`edge::GrpcLimits`): a number in the file, or its text in the
/// environment or a flag. figment reads text as a number for a field of the
/// config itself, but serde hands a flattened section its values as they
/// came, so the section parses the text itself.
pub fn number<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + std::str::FromStr,
    T::Err: std::fmt::Display,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOrText<T> {
        Number(T),
        Text(String),
    }
    match NumberOrText::<T>::deserialize(deserializer) {
        Ok(NumberOrText::Number(value)) => Ok(value),
        Ok(NumberOrText::Text(text)) => text.trim().parse().map_err(|e| de::Error::custom(format!("{text:?}: {e}"))),
        Err(_) => Err(de::Error::custom("expected a whole number")),
    }
}

/// `auth_keys`, the public keys whose tokens a service accepts: every
/// service requires at least one, since every RPC but health and reflection
/// needs a token.
pub fn require_auth_keys(keys: &[PathBuf]) -> Result<(), ConfigError> {
    if keys.is_empty() {
        return Err(ConfigError::Invalid {
            key: "auth_keys",
            message: "at least one public key file (PEM) is required; `battlelog token keygen` makes a pair".into(),
        });
    }
    Ok(())
}

/// `token_file`, the token a service presents to the journal and roller,
/// which admit only the `service` role.
pub fn require_token_file(token_file: Option<&Path>) -> Result<(), ConfigError> {
    if token_file.is_none_or(|path| path.as_os_str().is_empty()) {
        return Err(ConfigError::Invalid {
            key: "token_file",
            message:
                "a file holding this service's `service` token is required (`battlelog token issue --role service`)"
                    .into(),
        });
    }
    Ok(())
}

/// `token_max_lifetime_secs`, the longest a token may be valid: at least a
/// second, or no token would pass.
pub fn require_token_lifetime(secs: u64) -> Result<(), ConfigError> {
    if secs == 0 {
        return Err(ConfigError::Invalid {
            key: "token_max_lifetime_secs",
            message: "must be at least 1 (seconds a token may be valid, from its iat to its exp)".into(),
        });
    }
    Ok(())
}

/// For `#[serde(deserialize_with)]` on an optional key inside a flattened
/// section: an empty value (`BATTLELOG_<SERVICE>_METRICS_LISTEN=`) is unset,
/// as for the services' optional files; anything else is parsed from its
/// text.
pub fn optional<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    match Option::<String>::deserialize(deserializer)? {
        None => Ok(None),
        Some(text) if text.trim().is_empty() => Ok(None),
        Some(text) => text.trim().parse().map(Some).map_err(|e| de::Error::custom(format!("{text:?}: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    /// A config as a service declares one: a plain key, an optional one, a
    /// number, a boolean, a list and flattened keys.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Sample {
        listen: SocketAddr,
        url: Option<String>,
        batch: usize,
        dev: bool,
        #[serde(deserialize_with = "comma_separated")]
        keys: Vec<PathBuf>,
        #[serde(flatten)]
        tls: crate::tls::ServerTls,
    }

    impl Default for Sample {
        fn default() -> Self {
            Self {
                listen: SocketAddr::from(([127, 0, 0, 1], 1)),
                url: None,
                batch: 8,
                dev: false,
                keys: Vec::new(),
                tls: crate::tls::ServerTls::default(),
            }
        }
    }

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("sample.toml");
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn refused(layers: &Layers) -> (String, String, String) {
        match layers.extract::<Sample>() {
            Err(ConfigError::Value { key, origin, message }) => (key, origin, message),
            other => panic!("expected a value error, got {other:?}"),
        }
    }

    #[test]
    fn the_keys_are_the_fields_flattened_ones_and_unset_options_too() {
        let keys = keys::<Sample>();
        for key in ["listen", "url", "batch", "dev", "keys", "tls_cert", "tls_key", "tls_client_ca"] {
            assert!(keys.contains(&key.to_owned()), "{key} in {keys:?}");
        }
        assert_eq!(keys.len(), 8, "{keys:?}");
    }

    #[test]
    fn defaults_then_file_then_environment_then_flags() {
        assert_eq!(Layers::new("sample").extract::<Sample>().unwrap(), Sample::default());
        let (_dir, path) =
            file("listen = \"127.0.0.2:0\"\nbatch = 9\nkeys = [\"a.pem\", \"b.pem\"]\ntls_cert = \"c.pem\"\n");
        let layers = Layers::new("sample").file(Some(path));
        let from_file = layers.extract::<Sample>().unwrap();
        assert_eq!(from_file.listen.to_string(), "127.0.0.2:0");
        assert_eq!((from_file.batch, from_file.dev), (9, false));
        assert_eq!(from_file.keys, [PathBuf::from("a.pem"), PathBuf::from("b.pem")]);
        assert_eq!(from_file.tls.tls_cert, Some(PathBuf::from("c.pem")));

        let layers = layers.env(env(&[
            ("BATTLELOG_SAMPLE_LISTEN", "127.0.0.3:0"),
            ("BATTLELOG_SAMPLE_BATCH", "10"),
            ("BATTLELOG_SAMPLE_DEV", "true"),
            ("BATTLELOG_SAMPLE_KEYS", "c.pem,d.pem"),
            ("BATTLELOG_SAMPLE_TLS_KEY", "k.pem"),
            // Not keys of this service: its config file's variable, a
            // secret read elsewhere, another service's key.
            ("BATTLELOG_SAMPLE_CONFIG", "other.toml"),
            ("BATTLELOG_SAMPLE_MASTER_KEY", "00"),
            ("BATTLELOG_OTHER_BATCH", "x"),
        ]));
        let from_env = layers.extract::<Sample>().unwrap();
        assert_eq!(from_env.listen.to_string(), "127.0.0.3:0");
        assert_eq!((from_env.batch, from_env.dev), (10, true));
        assert_eq!(from_env.keys, [PathBuf::from("c.pem"), PathBuf::from("d.pem")]);
        assert_eq!(from_env.tls.tls_cert, Some(PathBuf::from("c.pem")), "the file's, no layer above sets it");
        assert_eq!(from_env.tls.tls_key, Some(PathBuf::from("k.pem")));

        let flags = [("listen", "127.0.0.4:0"), ("url", "http://u"), ("batch", "11")];
        let from_flags = layers.flags(flags.map(|(k, v)| (k.to_owned(), v.to_owned()))).extract::<Sample>().unwrap();
        assert_eq!(from_flags.listen.to_string(), "127.0.0.4:0");
        assert_eq!(from_flags.url.as_deref(), Some("http://u"));
        assert_eq!((from_flags.batch, from_flags.dev), (11, true));
    }

    #[test]
    fn a_value_that_does_not_fit_names_its_key_and_where_it_came_from() {
        let (_dir, path) = file("batch = \"many\"\n");
        let (key, origin, message) = refused(&Layers::new("sample").file(Some(path.clone())));
        assert_eq!(key, "batch");
        assert_eq!(origin, format!("config file {}", path.display()));
        assert!(message.contains("many"), "{message}");

        let (key, origin, _) = refused(&Layers::new("sample").env(env(&[("BATTLELOG_SAMPLE_BATCH", "many")])));
        assert_eq!((key.as_str(), origin.as_str()), ("batch", "BATTLELOG_SAMPLE_BATCH"));
        let (key, origin, _) = refused(&Layers::new("sample").env(env(&[("BATTLELOG_SAMPLE_LISTEN", "nowhere")])));
        assert_eq!((key.as_str(), origin.as_str()), ("listen", "BATTLELOG_SAMPLE_LISTEN"));
        let (key, origin, _) = refused(&Layers::new("sample").flags([("dev".to_owned(), "maybe".to_owned())]));
        assert_eq!((key.as_str(), origin.as_str()), ("dev", "--dev"));

        let error = Layers::new("sample").flags([("batch".to_owned(), "-1".to_owned())]).extract::<Sample>();
        let error = error.expect_err("a negative count").to_string();
        assert!(error.starts_with("invalid config batch: ") && error.ends_with("(from --batch)"), "{error}");
    }

    #[test]
    fn a_bad_value_of_a_flattened_key_is_named_too() {
        let (_dir, path) = file("tls_cert = 7\n");
        let (key, origin, message) = refused(&Layers::new("sample").file(Some(path.clone())));
        assert_eq!((key.as_str(), origin), ("tls_cert", format!("config file {}", path.display())));
        assert!(message.contains('7'), "{message}");
    }

    #[test]
    fn an_unknown_key_in_the_file_is_refused_by_name() {
        for text in ["lisen = \"127.0.0.1:0\"\n", "tls_cert = \"c.pem\"\nlisen = \"x\"\n"] {
            let (_dir, path) = file(text);
            let (key, origin, message) = refused(&Layers::new("sample").file(Some(path.clone())));
            assert_eq!(key, "lisen", "{text}");
            assert_eq!(origin, format!("config file {}", path.display()));
            assert!(message.contains("lisen"), "{message}");
        }
    }

    #[test]
    fn a_missing_or_malformed_file_is_named() {
        let missing = Layers::new("sample").file(Some(PathBuf::from("/nonexistent/sample.toml")));
        assert!(matches!(missing.extract::<Sample>(), Err(ConfigError::Read { .. })));
        let (_dir, path) = file("listen = \n");
        let error = Layers::new("sample").file(Some(path.clone())).extract::<Sample>().expect_err("bad TOML");
        assert!(matches!(&error, ConfigError::Parse { path: p, .. } if *p == path), "{error}");
    }

    /// A config with doc comments, as the reference reads them.
    #[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(default, deny_unknown_fields)]
    struct Documented {
        /// How many go
        /// at once.
        batch: usize,
        /// Where it listens; None: nowhere.
        listen: Option<SocketAddr>,
        format: crate::logging::LogFormat,
        #[serde(deserialize_with = "comma_separated")]
        keys: Vec<PathBuf>,
        #[serde(flatten)]
        tls: crate::tls::ServerTls,
        /// Endpoints by name.
        table: std::collections::BTreeMap<String, String>,
    }

    impl Default for Documented {
        fn default() -> Self {
            Self {
                batch: 8,
                listen: None,
                format: crate::logging::LogFormat::Text,
                keys: Vec::new(),
                tls: crate::tls::ServerTls::default(),
                table: std::collections::BTreeMap::new(),
            }
        }
    }

    #[test]
    fn the_reference_names_each_keys_variable_flag_default_and_doc() {
        let reference = reference::<Documented>("sample");
        let named: Vec<String> = reference.iter().map(|key| key.key.clone()).collect();
        assert_eq!(named, keys::<Documented>(), "every key, flattened ones too");
        let key = |name: &str| reference.iter().find(|key| key.key == name).expect(name).clone();

        let batch = key("batch");
        assert_eq!((batch.env.as_str(), batch.flag.as_str()), ("BATTLELOG_SAMPLE_BATCH", "--batch"));
        assert_eq!(batch.default.as_deref(), Some("8"));
        assert_eq!(batch.description, "How many go at once.", "the doc comment on one line");
        let listen = key("listen");
        assert_eq!(listen.default, None, "an unset option has no default");
        assert_eq!(listen.description, "Where it listens; None: nowhere.");
        assert_eq!(key("keys").default.as_deref(), Some("[]"));
        let format = key("format");
        assert_eq!(format.default.as_deref(), Some("\"text\""), "a string as TOML writes it");
        assert_eq!(format.description, "How logs are written. One of `text`, `json`.", "the type's doc and its values");
        let tls_cert = key("tls_cert");
        assert_eq!(tls_cert.flag, "--tls-cert");
        assert!(!tls_cert.description.is_empty(), "a flattened key's doc comment is its own");
        assert!(!batch.file_only && !tls_cert.file_only);
        let table = key("table");
        assert!(table.file_only, "a table is given in the file only");
        assert_eq!(table.default.as_deref(), Some("{}"));

        // The variable and the flag named are the ones the layers read.
        let from_env: Documented =
            Layers::new("sample").env([(batch.env.clone(), "3".to_owned())]).extract().expect("from the variable");
        assert_eq!(from_env.batch, 3);
        let command = CommandLine::command::<Documented>("sample", clap::Command::new("sample"));
        let matches = command.try_get_matches_from(["sample", batch.flag.as_str(), "4"]).expect("the flag parses");
        let line = CommandLine::from_matches::<Documented>(&matches);
        let from_flag: Documented = Layers::new("sample").flags(line.flags).extract().expect("from the flag");
        assert_eq!(from_flag.batch, 4);
    }

    #[test]
    fn the_command_line_has_one_flag_per_key_and_the_config_file() {
        let command = CommandLine::command::<Sample>("sample", clap::Command::new("sample"));
        command.clone().debug_assert();
        let matches = command
            .try_get_matches_from(["sample", "--config", "s.toml", "--tls-cert", "c.pem", "--batch", "3"])
            .expect("parses");
        let line = CommandLine::from_matches::<Sample>(&matches);
        assert_eq!(line.file, Some(PathBuf::from("s.toml")));
        let mut flags = line.flags;
        flags.sort();
        assert_eq!(flags, [("batch".to_owned(), "3".to_owned()), ("tls_cert".to_owned(), "c.pem".to_owned())]);
    }
}
