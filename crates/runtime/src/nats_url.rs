//! NATS URLs with credentials in them.
//!
//! Operators write a NATS login as the URL's userinfo
//! (`nats://journal:<password>@host:4222`), as NATS's own tools take it;
//! async-nats 0.51 ignores userinfo (it authenticates with what its
//! `ConnectOptions` carry), so [`NatsUrl`] takes the credentials out of the
//! URL, and masks the password wherever a URL is logged or printed.

use percent_encoding::percent_decode_str;

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
        let Some(user) = &self.user else { return self.address.clone() };
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

impl std::fmt::Debug for NatsUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// `url` with the password of its userinfo masked (`nats://journal:***@host`),
/// for anything that logs or prints a NATS URL.
pub fn redact_url(url: &str) -> String {
    NatsUrl::new(url).redacted()
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
    }
}
