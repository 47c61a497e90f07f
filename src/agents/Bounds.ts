/**
 * How big a prompt may be. The API's schemas check the text and the number of attachments; the
 * service checks the attachments' decoded total, which no field's schema sees.
 */

/** Prompt and steer text: at most 256 KiB of UTF-8. */
export const maxTextBytes = 256 * 1024
export const maxAttachments = 16
/** The attachments of one prompt together, decoded. */
export const maxAttachmentBytes = 16 * 1024 * 1024
