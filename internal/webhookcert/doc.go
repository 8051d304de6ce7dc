// Package webhookcert keeps the conversion webhook's certificates, with no
// cert-manager needed. Every replica, leader or not, keeps a CA and a
// serving certificate signed by it in one Secret (renewing both well before
// they expire, and making the Secret again when it is deleted), and writes
// the CA into the CRD's conversion caBundle by server-side apply. Replicas
// agree through optimistic concurrency on the Secret and the CRD, not
// through the leader's Lease. Every replica serves with the certificate in
// that Secret and takes up a new one as soon as it is written; watches of
// the Secret and the CRD put right, within seconds, what another writer
// changed. What is decided (is the Secret's content good, what replaces
// it) is pure and apart from what reads and writes the Secret and the CRD.
package webhookcert
