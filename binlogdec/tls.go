package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// tlsSpec is the source's TLS settings as sparkcdc states them (operator/sparkcdc/mysql/tls.py):
// the decoder must check the server exactly as the Python clients do, or TLS would mean less on
// the fast path.
type tlsSpec struct {
	// disabled | preferred | required | verify-ca | verify-identity ("" is disabled: an old caller)
	Mode string `json:"mode"`
	// PEM CA certificates; empty: the system's trust store (verifying modes only).
	CA string `json:"ca"`
}

// tlsConfig is the go-mysql TLS configuration for spec against host, nil for plain text.
// preferred and required encrypt without checking the certificate (like PyMySQL's preferred mode and
// libmysqlclient's REQUIRED); verify-ca checks the chain but not the name; verify-identity both.
func tlsConfig(spec tlsSpec, host string) (*tls.Config, error) {
	switch spec.Mode {
	case "", "disabled":
		return nil, nil
	case "preferred", "required":
		return &tls.Config{InsecureSkipVerify: true, ServerName: host, MinVersion: tls.VersionTLS12}, nil
	case "verify-ca", "verify-identity":
	default:
		return nil, fmt.Errorf("unknown TLS mode %q; check spec.source.tls.mode", spec.Mode)
	}
	roots, err := rootPool(spec.CA)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}
	if spec.Mode == "verify-ca" {
		// Go checks the name with the chain; verify-ca checks the chain alone, so the chain is
		// verified here instead (the standard library's own recipe for that).
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(state tls.ConnectionState) error {
			if len(state.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, cert := range state.PeerCertificates[1:] {
				opts.Intermediates.AddCert(cert)
			}
			_, err := state.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}

func rootPool(pem string) (*x509.CertPool, error) {
	if pem == "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			return nil, fmt.Errorf("no system trust store (%v) and no CA in spec.source.tls.caSecretRef", err)
		}
		return pool, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(pem)) {
		return nil, errors.New("the CA in spec.source.tls.caSecretRef holds no PEM certificate")
	}
	return pool, nil
}

// noServerTLS tells whether err is go-mysql refusing a server that does not offer TLS: preferred
// then connects in plain text, as the other clients do.
func noServerTLS(err error) bool {
	return err != nil && strings.Contains(err.Error(), "does not support TLS")
}

// tlsFailure names the setting to check when err is a failed TLS handshake.
func tlsFailure(err error, mode, addr string) error {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	if errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &record) || strings.Contains(err.Error(), "tls:") ||
		noServerTLS(err) {
		return fmt.Errorf("TLS to the source at %s failed (%v; mode %s); check spec.source.tls", addr, err, mode)
	}
	return err
}
