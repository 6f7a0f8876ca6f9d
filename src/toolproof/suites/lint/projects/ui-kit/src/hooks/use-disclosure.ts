import { useCallback, useState } from "react";

export interface Disclosure {
  open: boolean;
  onOpen: () => void;
  onClose: () => void;
  onToggle: () => void;
}

/** Open/closed state for dialogs, menus and popovers. */
export function useDisclosure(initial = false, onChange?: (open: boolean) => void): Disclosure {
  const [open, setOpen] = useState(initial);
  const update = useCallback(
    (next: boolean) => {
      setOpen(next);
      onChange?.(next);
    },
    [onChange],
  );
  const onOpen = useCallback(() => update(true), [update]);
  const onClose = useCallback(() => update(false), [update]);
  const onToggle = useCallback(() => update(!open), [update, open]);
  return { open, onOpen, onClose, onToggle };
}
