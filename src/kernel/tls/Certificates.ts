/** PEM certificates as `SVC_EXTRA_CA_CERTS` and `NODE_EXTRA_CA_CERTS` files hold them. */
import * as NodeCrypto from "node:crypto"

const pemBlock = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g

/** The certificates of a PEM text, each checked to parse; a text without any is an error (a string). */
export const certificatesIn = (text: string): ReadonlyArray<string> | string => {
  const blocks = text.match(pemBlock) ?? []
  if (blocks.length === 0) return "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
  for (const [index, block] of blocks.entries()) {
    try {
      new NodeCrypto.X509Certificate(block)
    } catch (error) {
      return `certificate ${index + 1} does not parse: ${(error as Error).message}`
    }
  }
  return blocks
}
