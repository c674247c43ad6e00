/**
 * Checks of PEM certificate, key and CA bundle files before they are used, so that a malformed or
 * mismatched file is refused with a reason naming it (and the one in use kept) rather than
 * failing TLS handshakes later: what `k8s.io/client-go/util/cert` and `crypto/tls.X509KeyPair`
 * check when the apiserver's dynamic certificate controllers reload a file
 * (`dynamiccertificates.DynamicCertKeyPairContent.loadCertKeyPair`, `DynamicFileCAContent.loadCABundle`).
 * Errors never quote key material.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { FileContent } from './file-reloader.ts';

/** A checked certificate (chain) and its private key, PEM as read. */
export interface CertKeyPair {
  cert: Buffer;
  key: Buffer;
  /** The leaf certificate's `notAfter`, ms since the epoch. */
  notAfterMs: number;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM bundle, parsed. @throws Error `<path>: …` when there is none or one does not parse. */
export function parseCertificates(f: FileContent): X509Certificate[] {
  const blocks = f.content.toString('utf8').match(PEM_CERT) ?? [];
  if (blocks.length === 0) throw new Error(`${f.path}: no PEM certificate found`);
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch (err) {
      throw new Error(`${f.path}: certificate ${i + 1} does not parse: ${(err as Error).message}`);
    }
  });
}

/**
 * `[cert, key]` → a {@link CertKeyPair}: the certificate file holds at least one certificate, the
 * key file a PEM private key, and the key is the leaf certificate's.
 * @throws Error naming the file at fault.
 */
export function parseCertKeyPair(files: readonly FileContent[]): CertKeyPair {
  const [certFile, keyFile] = files as [FileContent, FileContent];
  const leaf = parseCertificates(certFile)[0]!;
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(keyFile.content);
  } catch (err) {
    throw new Error(`${keyFile.path}: private key does not parse: ${(err as Error).message}`);
  }
  if (!leaf.checkPrivateKey(key))
    throw new Error(`${keyFile.path}: private key does not match the certificate in ${certFile.path}`);
  return { cert: certFile.content, key: keyFile.content, notAfterMs: leaf.validToDate.getTime() };
}

/** `[bundle]` → the bundle's bytes once every certificate in it parses. @throws Error naming the file. */
export function parseCaBundle(files: readonly FileContent[]): Buffer {
  const f = files[0]!;
  parseCertificates(f);
  return f.content;
}
