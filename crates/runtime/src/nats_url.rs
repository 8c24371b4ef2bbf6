//! NATS URLs with credentials in them, and lists of them.
//!
//! Operators write a NATS login as the URL's userinfo
//! (`nats://journal:<password>@host:4222`), as NATS's own tools take it;
//! async-nats 0.51 ignores userinfo (it authenticates with what its
//! `ConnectOptions` carry), so [`NatsUrl`] takes the credentials out of the
//! URL, and masks the password wherever a URL is logged or printed.
//!
//! Wherever a service or command takes a NATS URL it takes a list, comma
//! separated (`nats://a:4222,nats://b:4222,nats://c:4222`: the nodes of a
//! cluster, any of which will do), read by [`NatsUrls`] and by nothing else:
//! async-nats reads one string as one address, so a list handed to it whole
//! fails as "invalid port number". An entry that is no NATS address is
//! refused up front, by its position and text (password masked), so that a
//! typo stops a service at start instead of leaving it without its feed.

use std::str::FromStr;

use async_nats::ServerAddr;
use percent_encoding::percent_decode_str;

use crate::config::ConfigError;

/// A NATS URL split into the address to connect to and the credentials of
/// its userinfo (percent-decoded). Its `Debug` masks the password.
#[derive(Clone, PartialEq, Eq)]
pub struct NatsUrl {
    address: String,
    user: Option<String>,
    password: Option<String>,
}

impl NatsUrl {
    /// Splits `url` (`[scheme://][user[:password]@]host[:port]`). Anything
    /// that does not parse as a URL stays whole in the address, for
    /// async-nats to judge.
    pub fn new(url: &str) -> Self {
        let whole = || Self { address: url.to_owned(), user: None, password: None };
        // async-nats takes `host:port` without a scheme; `url` needs one.
        let schemeless = !url.contains("://");
        let parsed = if schemeless { format!("nats://{url}") } else { url.to_owned() };
        let Ok(mut parsed) = url::Url::parse(&parsed) else { return whole() };
        let decode = |text: &str| percent_decode_str(text).decode_utf8_lossy().into_owned();
        let user = Some(decode(parsed.username())).filter(|u| !u.is_empty());
        let password = parsed.password().map(decode);
        if user.is_none() && password.is_none() {
            return whole();
        }
        if parsed.set_username("").is_err() || parsed.set_password(None).is_err() {
            return whole();
        }
        let address = parsed.to_string();
        let address = if schemeless { address.trim_start_matches("nats://").to_owned() } else { address };
        Self { address, user, password }
    }

    /// The URL without its userinfo: what async-nats connects to.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The user (or token), when the URL has userinfo.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The URL with its password masked, for logs and banners.
    pub fn redacted(&self) -> String {
        let Some(user) = &self.user else { return mask_unparsed_userinfo(&self.address) };
        // Userinfo without a password is a token: all secret.
        let masked = if self.password.is_some() { format!("{user}:***@") } else { "***@".to_owned() };
        match self.address.split_once("://") {
            Some((scheme, host)) => format!("{scheme}://{masked}{host}"),
            None => format!("{masked}{}", self.address),
        }
    }

    /// Options that authenticate as the URL's user, or with its token
    /// (userinfo without a password, as NATS URLs write one); none without.
    pub fn connect_options(&self) -> async_nats::ConnectOptions {
        match (&self.user, &self.password) {
            (Some(user), Some(password)) => {
                async_nats::ConnectOptions::with_user_and_password(user.clone(), password.clone())
            }
            (Some(token), None) => async_nats::ConnectOptions::with_token(token.clone()),
            (None, _) => async_nats::ConnectOptions::new(),
        }
    }
}

/// `text` with what stands before an `@` of its authority masked: a URL
/// that did not parse (a bad port, say) keeps its userinfo in its address,
/// and a message that names it must not show its password.
fn mask_unparsed_userinfo(text: &str) -> String {
    let (scheme, rest) = match text.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), text),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let masked = match rest[..at].split_once(':') {
                Some((user, _)) => format!("{user}:***"),
                None => "***".to_owned(),
            };
            format!("{scheme}{masked}{}", &rest[at..])
        }
        None => text.to_owned(),
    }
}

impl std::fmt::Debug for NatsUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// `url` with the password of its userinfo masked (`nats://journal:***@host`),
/// for anything that logs or prints a NATS URL; each entry of a list is
/// masked on its own.
pub fn redact_url(url: &str) -> String {
    url.split(',').map(|entry| NatsUrl::new(entry.trim()).redacted()).collect::<Vec<_>>().join(",")
}

/// Why a NATS URL list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NatsUrlsError {
    /// Nothing but commas and spaces.
    #[error("no NATS URL given")]
    Empty,
    /// One entry is no NATS address; `entry` has its password masked.
    #[error("entry {position} of {count}, {entry:?}, {reason}")]
    BadEntry { position: usize, count: usize, entry: String, reason: String },
}

/// A comma-separated list of NATS URLs (the nodes of one cluster, or one
/// server), each a `[scheme://][user[:password]@]host[:port]` that
/// async-nats accepts (`nats`, `tls`, `ws` or `wss`). One connection logs
/// in once: the credentials are those of the entries that carry some, and
/// entries that carry different ones are refused. Its `Debug` masks
/// passwords.
#[derive(Clone, PartialEq, Eq)]
pub struct NatsUrls {
    urls: Vec<NatsUrl>,
    addresses: Vec<ServerAddr>,
}

impl NatsUrls {
    /// Reads `list`; empty entries (a trailing comma) are skipped.
    pub fn parse(list: &str) -> Result<Self, NatsUrlsError> {
        let entries: Vec<&str> = list.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
        if entries.is_empty() {
            return Err(NatsUrlsError::Empty);
        }
        let count = entries.len();
        let mut urls: Vec<NatsUrl> = Vec::with_capacity(count);
        let mut addresses = Vec::with_capacity(count);
        for (index, entry) in entries.iter().enumerate() {
            let url = NatsUrl::new(entry);
            let bad =
                |reason: String| NatsUrlsError::BadEntry { position: index + 1, count, entry: url.redacted(), reason };
            // A schemeless `host:port` is what async-nats takes too.
            let address = ServerAddr::from_str(url.address()).map_err(|e| bad(e.to_string()))?;
            if address.host().is_empty() {
                return Err(bad("names no host".into()));
            }
            let other_login = urls.iter().find(|u| u.user.is_some() && url.user.is_some() && u.user != url.user);
            let other_password =
                urls.iter().find(|u| u.user.is_some() && u.user == url.user && u.password != url.password);
            if other_login.or(other_password).is_some() {
                return Err(bad("logs in otherwise than an entry before it: one connection has one login".into()));
            }
            addresses.push(address);
            urls.push(url);
        }
        Ok(Self { urls, addresses })
    }

    /// [`Self::parse`] for a config key: the error names `key`.
    pub fn for_key(key: &'static str, list: &str) -> Result<Self, ConfigError> {
        Self::parse(list).map_err(|e| ConfigError::Invalid { key, message: e.to_string() })
    }

    /// Every address, without credentials: what async-nats connects to
    /// (any of them, and the rest of the cluster it learns from them).
    pub fn addresses(&self) -> Vec<ServerAddr> {
        self.addresses.clone()
    }

    /// The entries.
    pub fn urls(&self) -> &[NatsUrl] {
        &self.urls
    }

    /// The list with every password masked, for logs and banners.
    pub fn redacted(&self) -> String {
        self.urls.iter().map(NatsUrl::redacted).collect::<Vec<_>>().join(",")
    }

    /// Options that log in with the list's credentials; none without.
    pub fn connect_options(&self) -> async_nats::ConnectOptions {
        match self.urls.iter().find(|u| u.user.is_some()) {
            Some(url) => url.connect_options(),
            None => async_nats::ConnectOptions::new(),
        }
    }
}

impl FromStr for NatsUrls {
    type Err = NatsUrlsError;

    fn from_str(list: &str) -> Result<Self, NatsUrlsError> {
        Self::parse(list)
    }
}

impl std::fmt::Debug for NatsUrls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_the_url_and_logs_never_see_the_password() {
        let url = NatsUrl::new("nats://journal:s3cr%40t@127.0.0.1:4222");
        assert_eq!(url.address(), "nats://127.0.0.1:4222");
        assert_eq!(url.user(), Some("journal"));
        assert_eq!(url.password.as_deref(), Some("s3cr@t"), "percent-decoded");
        assert_eq!(url.redacted(), "nats://journal:***@127.0.0.1:4222");
        assert!(!format!("{url:?}").contains("s3cr"));
        assert_eq!(redact_url("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
        assert_eq!(redact_url("u:p@host:4222"), "u:***@host:4222");
        assert_eq!(NatsUrl::new("u:p@host:4222").address(), "host:4222");
        assert_eq!(redact_url("nats://s3cr3t-token@host"), "nats://***@host");
        assert_eq!(NatsUrl::new("nats://host:4222").user(), None);
        assert_eq!(NatsUrl::new("nats://a:4222,nats://b:4222").address(), "nats://a:4222,nats://b:4222");
        assert_eq!(redact_url("nats://u:p@a:4222,nats://u:p@b:4222"), "nats://u:***@a:4222,nats://u:***@b:4222");
        // What does not parse keeps no password either.
        assert_eq!(redact_url("nats://u:s3cr3t@host:port"), "nats://u:***@host:port");
        assert_eq!(redact_url("t0ken@host:port"), "***@host:port");
    }

    #[test]
    fn a_list_is_every_node_with_one_login() {
        let list = NatsUrls::parse(" nats://journal:pw@a:4222, b:4223 ,tls://journal:pw@c,").expect("a list");
        let addresses: Vec<String> = list.addresses().iter().map(|a| a.clone().into_inner().to_string()).collect();
        assert_eq!(addresses, ["nats://a:4222", "nats://b:4223", "tls://c"]);
        assert_eq!(list.redacted(), "nats://journal:***@a:4222,b:4223,tls://journal:***@c");
        assert!(!format!("{list:?}").contains("pw"));
        assert_eq!(list.urls()[0].user(), Some("journal"));
        let one = NatsUrls::parse("nats://127.0.0.1:4222").expect("one URL is a list of one");
        assert_eq!(one.addresses().len(), 1);
        assert_eq!("nats://a".parse::<NatsUrls>().map(|l| l.urls().len()), Ok(1));
    }

    #[test]
    fn a_bad_entry_is_named_by_position_and_text_without_its_password() {
        let error = |list: &str| NatsUrls::parse(list).unwrap_err().to_string();
        assert_eq!(NatsUrls::parse(" , "), Err(NatsUrlsError::Empty));
        let port = error("nats://a:4222,nats://u:secret@b:notaport");
        assert!(port.starts_with("entry 2 of 2, \"nats://u:***@b:notaport\""), "{port}");
        assert!(port.contains("invalid port number") && !port.contains("secret"), "{port}");
        assert!(error("http://a:4222").contains("invalid scheme"), "{}", error("http://a:4222"));
        let logins = error("nats://journal:x@a,nats://resolver:y@b");
        assert!(logins.starts_with("entry 2 of 2") && logins.contains("one login"), "{logins}");
        assert!(error("nats://journal:x@a,nats://journal:y@b").contains("one login"));
        let keyed = NatsUrls::for_key("nats_url", "nats://a:x").unwrap_err().to_string();
        assert!(keyed.starts_with("invalid config nats_url: entry 1 of 1, \"nats://a:x\""), "{keyed}");
    }
}
