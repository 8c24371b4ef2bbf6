//! The one way a service reaches out over HTTP (webhooks' deliveries, the
//! roller's beacon relays): HTTP/1 over `http://` or `https://`, rustls
//! trusting the system's root certificates.

use hyper_util::client::legacy::connect::HttpConnector;
use tracing::warn;

/// The connector for hyper-util's client. With no system roots found (a
/// bare container), `https://` URLs fail until there are; `http://` works.
pub fn https_connector() -> hyper_rustls::HttpsConnector<HttpConnector> {
    let builder = match hyper_rustls::HttpsConnectorBuilder::new().with_native_roots() {
        Ok(builder) => builder,
        Err(error) => {
            warn!(%error, "no system root certificates: https:// URLs will fail");
            let config = rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
        }
    };
    builder.https_or_http().enable_http1().build()
}
