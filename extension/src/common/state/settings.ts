// What surrounds the chat: the settings shown in its chips, the `::commands` offered, the sidecar's status, and a
// problem the extension reports in the transcript.
import { assertNever } from './items';
import type { ChatState, LocalAction, NoticeItem } from './model';

type SettingsAction = Extract<LocalAction, { type: 'problem' | 'commandsListed' | 'settingsChanged' | 'sidecarStatus' }>;

export function reduceSettings(state: ChatState, action: SettingsAction): ChatState {
  switch (action.type) {
    case 'problem': {
      const item: NoticeItem = { kind: 'notice', id: `i${state.nextId}`, level: 'warning', code: action.code, message: action.message };
      return { ...state, items: [...state.items, item], nextId: state.nextId + 1 };
    }
    case 'commandsListed':
      return { ...state, commands: action.commands };
    case 'settingsChanged': {
      const { type: _type, ...changes } = action;
      return { ...state, settings: { ...state.settings, ...changes } };
    }
    case 'sidecarStatus':
      return { ...state, sidecar: { status: action.status, message: action.message ?? null } };
    default:
      return assertNever(action);
  }
}
