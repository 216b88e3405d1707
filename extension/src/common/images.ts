// Images attached to a chat line (pasted, dropped): which the chat takes before reading a byte of them, and what
// the user is told of the others. The engine checks them again from their bytes (tools/images.py) and re-encodes
// them within its `images:` bounds; these limits only keep the webview from holding what it would refuse anyway.
export const IMAGE_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
/** As the engine's default `images.per_message`. */
export const MAX_IMAGES = 8;
/** Before sending: the engine makes a smaller one of anything up to this. */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const IMAGE_NAME = /\.(png|jpe?g|gif|webp)$/i;

/** An image as the webview sends it: `data` is its bytes in base64 (no `data:` prefix). */
export interface ImageUpload {
  name: string;
  mediaType: string;
  data: string;
  /** A small picture of it (a data URL) for the chips and the sent line; the bytes stay out of the transcript. */
  thumb?: string;
}

/** A sent line's image as the transcript keeps it: its name, and its small picture while the window lives. */
export interface SentImage {
  name: string;
  thumb?: string;
}

export interface ImageCandidate {
  name: string;
  type: string;
  size: number;
}

/** Which of `files` join the `already` attached ones (in order), and one line for each that does not. */
export function admitImages<T extends ImageCandidate>(files: readonly T[], already: number): { taken: T[]; notes: string[] } {
  const taken: T[] = [];
  const notes: string[] = [];
  for (const file of files) {
    const name = file.name || 'the pasted image';
    if (!IMAGE_TYPES.includes(file.type)) {
      notes.push(`${name} was not attached: ${file.type || 'an unknown type'} is not an image the chat sends (PNG, JPEG, GIF or WebP).`);
    } else if (file.size > MAX_IMAGE_BYTES) {
      notes.push(`${name} was not attached: ${megabytes(file.size)} is too large (at most ${MAX_IMAGE_BYTES / MEGABYTE} MB).`);
    } else if (already + taken.length >= MAX_IMAGES) {
      notes.push(`${name} was not attached: at most ${MAX_IMAGES} images go with one message.`);
    } else {
      taken.push(file);
    }
  }
  return { taken, notes };
}

/** A workspace file the engine would send as an image when mentioned with `@` (it reads the bytes to be sure). */
export function isImageName(path: string): boolean {
  return IMAGE_NAME.test(path);
}

const MEGABYTE = 1024 * 1024;
const megabytes = (bytes: number) => `${(bytes / MEGABYTE).toFixed(1)} MB`;

/** The sent images as the workspace state keeps them: names only (a thumbnail is for this window). */
export function namesOnly(images: readonly SentImage[]): SentImage[] {
  return images.map((image) => ({ name: image.name }));
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** What the host takes from the webview as an image (the webview is a browser page: check what it sends). */
export function isImageUpload(value: unknown): value is ImageUpload {
  if (typeof value !== 'object' || value === null) return false;
  const image = value as Record<string, unknown>;
  return typeof image.name === 'string' && image.name.length <= 300 && IMAGE_TYPES.includes(image.mediaType as string)
    && typeof image.data === 'string' && image.data.length > 0 && image.data.length <= Math.ceil(MAX_IMAGE_BYTES / 3) * 4
    && image.data.length % 4 === 0 && BASE64.test(image.data)
    && (image.thumb === undefined || (typeof image.thumb === 'string' && image.thumb.length <= 200_000
      && /^data:image\/(png|jpeg|webp);base64,/.test(image.thumb)));
}
