// Images on a chat line (issue 45, item 2): which pasted or dropped files the chat takes and what it says of the
// others, what the webview may send the host, the sent line's thumbnails, and what the workspace state keeps.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { JSDOM } from 'jsdom';
import { admitImages, isImageName, MAX_IMAGE_BYTES, MAX_IMAGES } from '../src/common/images';
import { isWebviewMessage } from '../src/common/messages';
import { forStorage, initialState, reduce, replay, type ChatState } from '../src/common/state';
import { createMarkdownRenderer } from '../src/webview/markdown';
import { renderItem, type RenderContext } from '../src/webview/render';

let ctx: RenderContext;
before(() => {
  const dom = new JSDOM('<!DOCTYPE html><body></body>');
  (globalThis as { document?: Document }).document = dom.window.document;
  ctx = { markdown: createMarkdownRenderer(dom.window as unknown as Window & typeof globalThis), expanded: new Set() };
});

const draw = (state: ChatState) => {
  const root = document.createElement('div');
  for (const item of state.items) root.append(renderItem(item, ctx));
  return root;
};
const file = (name: string, type = 'image/png', size = 1000) => ({ name, type, size });
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const THUMB = `data:image/webp;base64,${PNG}`;

describe('attaching images', () => {
  it('takes PNG, JPEG, GIF and WebP, and says why of every other file', () => {
    const files = [file('a.png'), file('b.jpg', 'image/jpeg'), file('c.gif', 'image/gif'), file('d.webp', 'image/webp'),
      file('e.svg', 'image/svg+xml'), file('notes.txt', 'text/plain'), file('blob', '')];
    const { taken, notes } = admitImages(files, 0);
    assert.deepEqual(taken.map((f) => f.name), ['a.png', 'b.jpg', 'c.gif', 'd.webp']);
    assert.deepEqual(notes, [
      'e.svg was not attached: image/svg+xml is not an image the chat sends (PNG, JPEG, GIF or WebP).',
      'notes.txt was not attached: text/plain is not an image the chat sends (PNG, JPEG, GIF or WebP).',
      'blob was not attached: an unknown type is not an image the chat sends (PNG, JPEG, GIF or WebP).',
    ]);
  });

  it('says a file over 20 MB is too large, and takes one of exactly 20 MB', () => {
    const { taken, notes } = admitImages([file('big.png', 'image/png', MAX_IMAGE_BYTES + 1), file('edge.png', 'image/png', MAX_IMAGE_BYTES)], 0);
    assert.deepEqual(taken.map((f) => f.name), ['edge.png']);
    assert.deepEqual(notes, ['big.png was not attached: 20.0 MB is too large (at most 20 MB).']);
    assert.match(admitImages([file('huge.png', 'image/png', 7.5 * 1024 * 1024 * 10)], 0).notes[0], /75.0 MB is too large/);
  });

  it('takes at most eight per message, counting those already attached', () => {
    const nine = Array.from({ length: 9 }, (_, i) => file(`${i}.png`));
    assert.equal(admitImages(nine, 0).taken.length, MAX_IMAGES);
    const { taken, notes } = admitImages([file('x.png'), file('y.png')], 7);
    assert.deepEqual(taken.map((f) => f.name), ['x.png']);
    assert.deepEqual(notes, ['y.png was not attached: at most 8 images go with one message.']);
  });

  it('knows an image file of the workspace by its name, for the @ picker', () => {
    assert.deepEqual(['@shot.png', 'a/b.JPEG', 'c.jpg', 'd.webp', 'e.gif', 'f.svg', 'png', 'g.png.txt'].map(isImageName),
      [true, true, true, true, true, false, false, false]);
  });
});

describe('images the webview sends', () => {
  const send = (images: unknown) => isWebviewMessage({ type: 'send', text: 'look', images });
  it('are base64 of an image type, with a data-URL thumbnail at most', () => {
    assert.equal(send([{ name: 'a.png', mediaType: 'image/png', data: PNG, thumb: THUMB }]), true);
    assert.equal(send([{ name: 'a.png', mediaType: 'image/png', data: PNG }]), true);
    assert.equal(send([{ name: 'a.svg', mediaType: 'image/svg+xml', data: PNG }]), false);
    assert.equal(send([{ name: 'a.png', mediaType: 'image/png', data: `data:image/png;base64,${PNG}` }]), false);
    assert.equal(send([{ name: 'a.png', mediaType: 'image/png', data: '' }]), false);
    assert.equal(send([{ name: 'a.png', mediaType: 'image/png', data: PNG, thumb: 'https://evil.example/x.png' }]), false);
    assert.equal(send([{ mediaType: 'image/png', data: PNG }]), false);
    assert.equal(send('a.png'), false);
    assert.equal(send(Array.from({ length: 9 }, () => ({ name: 'a.png', mediaType: 'image/png', data: PNG }))), false);
  });
});

describe('a line with images', () => {
  const sent = () => reduce(initialState(), { type: 'userMessage', text: 'what is wrong here?',
    images: [{ name: 'shot.png', thumb: THUMB }, { name: 'image.png', thumb: THUMB }] });

  it('shows their thumbnails', () => {
    const shown = [...draw(sent()).querySelectorAll<HTMLElement>('[data-testid="sent-image"]')];
    assert.deepEqual(shown.map((e) => [e.dataset.name, e.querySelector('img')?.getAttribute('src')]),
      [['shot.png', THUMB], ['image.png', THUMB]]);
  });

  it('is kept in the workspace state with the images\' names only', () => {
    const stored = forStorage({ ...sent(), session: 's1' });
    const line = stored.items[0];
    assert.equal(line.kind, 'user');
    assert.deepEqual(line.kind === 'user' && line.images, [{ name: 'shot.png' }, { name: 'image.png' }]);
    assert.doesNotMatch(JSON.stringify(stored), /base64/);
    const shown = [...draw(stored).querySelectorAll<HTMLElement>('[data-testid="sent-image"]')];
    assert.deepEqual(shown.map((e) => [e.textContent, e.querySelector('img')]), [['shot.png', null], ['image.png', null]]);
  });

  it('replayed, says how many images it had', () => {
    const base = { session: 's1', turn: 't1' };
    const state = replay(initialState(), 's1', [{ ...base, seq: 0, type: 'userMessage', text: 'look', imageCount: 2 },
      { ...base, seq: 1, type: 'done', status: 'completed', toolCalls: 0, usage: null }]);
    const shown = [...draw(state).querySelectorAll<HTMLElement>('[data-testid="sent-image"]')];
    assert.deepEqual(shown.map((e) => e.dataset.name), ['image 1', 'image 2']);
    const plain = replay(initialState(), 's1', [{ ...base, seq: 0, type: 'userMessage', text: 'look' }]);
    assert.equal(draw(plain).querySelector('[data-testid="user-images"]'), null);
  });
});
