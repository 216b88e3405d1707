// The images of the next line, above the chat input: pasted (Ctrl+V) or dropped files become thumbnail chips (×
// removes one, a click shows it larger); what is not taken (a wrong type, too large, one too many, unreadable) is a
// note under them, never dropped in silence. The bytes go to the host only when the line is sent.
import { admitImages, type ImageUpload } from '../common/images';
import { h, icon } from './dom';

/** The longest side of a thumbnail, in pixels: sharp on a 2x screen at the chips' size, a few kilobytes. */
const THUMB_SIDE = 128;

export class ImageTray {
  readonly element: HTMLElement;
  images: ImageUpload[] = [];
  private readonly row: HTMLElement;
  private readonly note: HTMLElement;
  /** Files being read: they count against the limit already. */
  private reading = 0;

  constructor(private readonly focus: () => void) {
    this.row = h('div', { className: 'image-chips', 'data-testid': 'image-chips' });
    this.note = h('div', { className: 'image-note', 'data-testid': 'image-note', role: 'status', hidden: true });
    this.element = h('div', { className: 'image-tray', hidden: true }, this.row, this.note);
    this.row.addEventListener('click', (e) => {
      const chip = (e.target as HTMLElement).closest<HTMLElement>('[data-index]');
      if (!chip) return;
      const index = Number(chip.dataset.index);
      if ((e.target as HTMLElement).closest('[data-testid="image-chip-remove"]')) {
        this.images.splice(index, 1);
        this.draw();
        this.focus();
      } else if (this.images[index]) {
        showPreview(this.images[index]);
      }
    });
    this.row.addEventListener('keydown', (e) => {  // a chip by keyboard: Enter shows it, Delete takes it off
      const index = Number((e.target as HTMLElement).closest<HTMLElement>('[data-index]')?.dataset.index ?? NaN);
      if (!this.images[index] || (e.target as HTMLElement).closest('button')) return;
      if (e.key === 'Enter' || e.key === ' ') showPreview(this.images[index]);
      else if (e.key === 'Delete' || e.key === 'Backspace') {
        this.images.splice(index, 1);
        this.draw();
        this.focus();
      } else return;
      e.preventDefault();
    });
  }

  /** Pasted or dropped files: those the chat takes become chips; a note says what became of the others. */
  async add(files: readonly File[]): Promise<void> {
    const { taken, notes } = admitImages(files, this.images.length + this.reading);
    this.reading += taken.length;
    const read = await Promise.all(taken.map((file) => readImage(file).catch(() => {
      notes.push(`${file.name || 'The pasted image'} was not attached: it could not be read as an image.`);
      return null;
    })));
    this.reading -= taken.length;
    this.images.push(...read.filter((image): image is ImageUpload => image !== null));
    this.draw(notes);
  }

  /** The images of a line put back (Edit & resend), or none after a send. */
  set(images: readonly ImageUpload[]): void {
    this.images = [...images];
    this.draw();
  }

  private draw(notes: readonly string[] = []): void {
    this.note.hidden = notes.length === 0;
    this.note.replaceChildren(...notes.map((line) => h('div', {}, icon('warning'), ` ${line}`)));
    this.element.hidden = this.images.length === 0 && notes.length === 0;
    this.row.replaceChildren(...this.images.map((image, i) => h('span', {
      className: 'image-chip', 'data-testid': 'image-chip', 'data-name': image.name, 'data-index': String(i),
      title: `${image.name}: click to see it larger`, role: 'button', tabindex: '0',
    }, h('img', { src: image.thumb ?? `data:${image.mediaType};base64,${image.data}`, alt: image.name }),
    h('button', { className: 'image-chip-remove', 'data-testid': 'image-chip-remove', title: `Remove ${image.name}`,
      'aria-label': `Remove ${image.name}` }, icon('close')))));
  }
}

/** The image whole, over the chat, until a click or Escape. */
function showPreview(image: ImageUpload): void {
  document.querySelector('[data-testid="image-preview"]')?.remove();
  const preview = h('div', { className: 'image-preview', 'data-testid': 'image-preview', role: 'dialog',
    'aria-label': `${image.name}, larger`, tabindex: '-1' },
  h('img', { src: `data:${image.mediaType};base64,${image.data}`, alt: image.name }),
  h('div', { className: 'image-preview-name' }, image.name));
  const close = () => {
    preview.remove();
    document.removeEventListener('keydown', onKey, true);
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key !== 'Escape') return;
    e.preventDefault();
    e.stopPropagation();
    close();
  };
  preview.addEventListener('click', close);
  document.addEventListener('keydown', onKey, true);
  document.body.append(preview);
  preview.focus();
}

/** A file's bytes in base64 and a small picture of it; rejects when the browser cannot decode it as an image. */
async function readImage(file: File): Promise<ImageUpload> {
  const [dataUrl, thumb] = await Promise.all([
    new Promise<string>((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result));
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(file);
    }),
    thumbnail(file),
  ]);
  return { name: file.name || 'pasted image', mediaType: file.type, data: dataUrl.slice(dataUrl.indexOf(',') + 1), thumb };
}

async function thumbnail(file: File): Promise<string> {
  const bitmap = await createImageBitmap(file);
  const scale = Math.min(1, THUMB_SIDE / Math.max(bitmap.width, bitmap.height));
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, Math.round(bitmap.width * scale));
  canvas.height = Math.max(1, Math.round(bitmap.height * scale));
  canvas.getContext('2d')?.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  bitmap.close();
  return canvas.toDataURL('image/webp', 0.85); // PNG where WebP cannot be written: still small at this size
}
