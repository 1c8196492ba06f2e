// KoED Studio's curation view: one dialogue with every annotator's spans in its text,
// stacked per annotator under each turn that has any, agreements marked (a span every
// annotator marked alike), and, for the reviewer, the final answer's row. A click on an
// annotator's span puts it in the final answer, a click on the final row's span takes it
// out: the server checks the key against the spans it pooled. Text is placed with
// textContent only.
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  parentElement.querySelectorAll(".koed-curation").forEach((old) => old.remove());
  const root = document.createElement("div");
  root.className = "koed-curation";
  parentElement.appendChild(root);
  const T = data.texts;
  let sent = 0;
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const legend = el("div", "legend");
  for (const t of data.types) {
    const item = el("span", "key");
    const swatch = el("span", "swatch");
    swatch.style.background = t.color;
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(t.short));
    item.title = t.label;
    legend.appendChild(item);
  }
  legend.appendChild(el("span", "agreed-key", T.agreed));
  if (data.clickable) legend.appendChild(el("span", "how", T.how));
  root.appendChild(legend);
  const fill = (cell, text, marks) => {
    // Nested spans are drawn inside each other (stacked, as in the annotator's own view),
    // each its own element, so each can be seen and clicked; a span that crosses another's
    // edge is drawn in pieces that carry the same key.
    const chars = Array.from(text);
    const order = (a, b) => a.start - b.start || b.end - a.end;
    const put = (parent, from, to, list) => {
      let at = from;
      let rest = list.slice().sort(order);
      while (rest.length) {
        const m = rest.shift();
        if (m.end <= m.start) continue;
        parent.appendChild(document.createTextNode(chars.slice(at, m.start).join("")));
        const inside = [];
        const after = [];
        for (const o of rest) {
          if (o.start >= m.end) after.push(o);
          else if (o.end <= m.end) inside.push(o);
          else {
            inside.push({ ...o, end: m.end });
            after.push({ ...o, start: m.end });
          }
        }
        const mark = el("mark", m.cls, "");
        mark.title = m.title;
        if (m.color) mark.style.background = m.color;
        mark.dataset.key = m.key;
        if (inside.length) mark.classList.add("outer");
        if (data.clickable) {
          mark.setAttribute("role", "button");
          mark.addEventListener("click", (event) => {
            event.stopPropagation(); // a nested span's click is its own, not its outer's
            sent += 1;
            setTriggerValue("toggle", { key: m.key, final: m.cls.includes("final"), n: sent });
          });
        }
        put(mark, m.start, m.end, inside);
        parent.appendChild(mark);
        at = m.end;
        rest = after.sort(order);
      }
      parent.appendChild(document.createTextNode(chars.slice(at, to).join("")));
    };
    put(cell, 0, chars.length, marks);
  };
  const table = document.createElement("table");
  const head = document.createElement("tr");
  for (const label of ["", "", ...data.headers]) head.appendChild(el("th", "", label));
  table.appendChild(head);
  for (const turn of data.turns) {
    const lines = turn.lines.length ? turn.lines : [{ label: "", cls: "", marks: { ko: [], en: [] } }];
    lines.forEach((line, i) => {
      const row = document.createElement("tr");
      row.className = `${line.cls} ${i === lines.length - 1 ? "last" : ""}`;
      if (i === 0) {
        const who = el("td", "who", turn.who);
        who.rowSpan = lines.length;
        row.appendChild(who);
      }
      row.appendChild(el("td", "line", line.label));
      for (const lang of ["ko", "en"]) {
        const td = el("td", lang);
        const txt = el("div", "txt");
        txt.dataset.lang = lang;
        txt.dataset.position = String(turn.position);
        fill(txt, turn[lang], line.marks[lang]);
        td.appendChild(txt);
        row.appendChild(td);
      }
      table.appendChild(row);
    });
  }
  root.appendChild(table);
}
