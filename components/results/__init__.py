"""The Results pages' pieces (Empathy gap, Demo, Episodes, Agreement): the gap page's
sections, the score-source pickers and talk mode."""
