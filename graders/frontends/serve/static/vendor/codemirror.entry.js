import {EditorView, basicSetup} from "codemirror";
import {python} from "@codemirror/lang-python";
import {indentUnit} from "@codemirror/language";
import {EditorState} from "@codemirror/state";
import {keymap} from "@codemirror/view";
import {indentWithTab} from "@codemirror/commands";
export function createEditor(parent, doc, onChange) {
  return new EditorView({
    parent,
    state: EditorState.create({doc, extensions: [basicSetup, python(), indentUnit.of("    "),
      keymap.of([indentWithTab]),
      EditorView.updateListener.of(u => { if (u.docChanged && onChange) onChange(); }),
      EditorView.theme({"&": {height: "100%"}, ".cm-scroller": {fontFamily: "ui-monospace, 'DejaVu Sans Mono', monospace"}})]}),
  });
}
export function getText(view) { return view.state.doc.toString(); }
export function setText(view, text) { view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: text}}); }
