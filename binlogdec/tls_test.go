package main

import (
	"errors"
	"strings"
	"testing"
)

func TestTLSConfigModes(t *testing.T) {
	for _, mode := range []string{"", "disabled"} {
		if cfg, err := tlsConfig(tlsSpec{Mode: mode}, "db"); cfg != nil || err != nil {
			t.Fatalf("%q: want plain text, got %v %v", mode, cfg, err)
		}
	}
	for _, mode := range []string{"preferred", "required"} {
		cfg, err := tlsConfig(tlsSpec{Mode: mode}, "db")
		if err != nil || cfg == nil || !cfg.InsecureSkipVerify {
			t.Fatalf("%q: want unverified TLS, got %v %v", mode, cfg, err)
		}
	}
	cfg, err := tlsConfig(tlsSpec{Mode: "verify-identity"}, "db.example")
	if err != nil || cfg.InsecureSkipVerify || cfg.ServerName != "db.example" || cfg.RootCAs == nil {
		t.Fatalf("verify-identity: want a checked name and the system roots, got %+v %v", cfg, err)
	}
	cfg, err = tlsConfig(tlsSpec{Mode: "verify-ca"}, "db")
	if err != nil || !cfg.InsecureSkipVerify || cfg.VerifyConnection == nil {
		t.Fatalf("verify-ca: want the chain checked by VerifyConnection, got %+v %v", cfg, err)
	}
	if _, err := tlsConfig(tlsSpec{Mode: "verify-ca", CA: "not a certificate"}, "db"); err == nil ||
		!strings.Contains(err.Error(), "spec.source.tls.caSecretRef") {
		t.Fatalf("a bad CA: want an error naming the field, got %v", err)
	}
	if _, err := tlsConfig(tlsSpec{Mode: "bogus"}, "db"); err == nil {
		t.Fatal("an unknown mode: want an error")
	}
}

func TestTLSFailureNamesTheSetting(t *testing.T) {
	err := tlsFailure(errors.New("the MySQL Server does not support TLS required by the client"), "required", "db:3306")
	if !strings.Contains(err.Error(), "check spec.source.tls") {
		t.Fatalf("got %v", err)
	}
	other := errors.New("access denied")
	if tlsFailure(other, "required", "db:3306") != other {
		t.Fatal("other errors pass unchanged")
	}
}
