// Identifiers shared by the manifest (package.json) and the code; the manifest test checks they agree.
export const CHAT_VIEW_ID = 'sunwell.chatView';
export const PREVIEW_SCHEME = 'sunwell-preview';
