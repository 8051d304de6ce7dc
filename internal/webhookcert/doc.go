// Package webhookcert keeps the conversion webhook's certificates, with no
// cert-manager needed. The leader keeps a CA and a serving certificate
// signed by it in one Secret, which the manifests ship empty (renewing
// both well before they expire), and writes the CA into the CRD's
// conversion caBundle by server-side apply. Every replica serves with the
// certificate in that Secret and takes up a new one as soon as it is
// written. What is decided (is the Secret's content good, what replaces
// it) is pure and apart from what reads and writes the Secret and the CRD.
package webhookcert
