//! TLS for connections to PostgreSQL: rustls with the ring provider, trusting the system's
//! certificate authorities and, when configured, those of one PEM file. Whether TLS is used
//! at all is the URL's `sslmode` (`disable`, `prefer` — the default —, `require`).

use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use super::PgSetupError;

pub(crate) fn connector(ca_file: Option<&Path>) -> Result<tokio_postgres_rustls::MakeRustlsConnect, PgSetupError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = ca_file {
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| PgSetupError::CaFile { path: path.display().to_string(), error: e.to_string() })?;
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| PgSetupError::CaFile { path: path.display().to_string(), error: e.to_string() })?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| PgSetupError::CaFile { path: "(TLS setup)".into(), error: e.to_string() })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}
