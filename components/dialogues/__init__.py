"""The Dialogues pages' pieces (Explorer, Label overview, Adaptation): the filter form
and the aligned ko/en dialogue view."""
