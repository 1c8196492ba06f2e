"""Features two or more sections show: the data-source banner, model choice, the
episode view and the gap by adaptation. Built on ``components.core``; never imports a
section."""
