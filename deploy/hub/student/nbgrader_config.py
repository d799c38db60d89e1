"""nbgrader settings of every student's server on the hub (JUPYTER_CONFIG_PATH, jupyterhub_config.py).

The exchange and course id come from the hub. ``validate_all`` as in ``make lab``'s student
environment: Validate runs the open checks, not the (absent) hidden tests.

A submission is readable by its student and the instructor's group only. nbgrader==0.9.6's
``ExchangeSubmit.copy_files`` (``nbgrader/exchange/default/submit.py``) leaves its files world-readable and
makes the submission folder mode 0777 "so the instructor can delete later": anyone who learnt its name
could read it, or put files into it. The course's ``inbound`` folder is setgid: an entry made in it gets
the instructor's group, and so does every file made in the entry, as long as nobody changes the entry's
mode (a student is not in that group, so the kernel drops the setgid bit at their first ``chmod``, and
``shutil.copytree``, which nbgrader copies with, ends with one). :class:`PrivateSubmit` copies without
changing any mode, makes files 0640 and folders 0750 as it creates them, and closes the folder nbgrader
opened to everyone.
"""

import os
import shutil

from nbgrader.exchange.default.submit import ExchangeSubmit
from nbgrader.utils import ignore_patterns

c = get_config()  # noqa: F821 -- injected by traitlets when it runs this file
c.Exchange.root = os.environ["MODULE6_EXCHANGE"]
c.CourseDirectory.course_id = os.environ["MODULE6_COURSE_ID"]
c.Validator.validate_all = True


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's submit; the submission readable by the student and the instructor's group only."""

    def _in_inbox(self, path) -> bool:
        return os.path.dirname(os.path.abspath(path)) == os.path.abspath(self.inbound_path)

    def do_copy(self, src, dest, log=None):
        if not self._in_inbox(dest):
            return super().do_copy(src, dest, log=log)
        # nbgrader's checks and filters (size, ignore, include, file size), then a copy that sets no mode.
        if self.get_size(src) > 1000 * self.coursedir.max_dir_size:
            raise RuntimeError(f"Directory size is too big. Maximum size is {1000 * self.coursedir.max_dir_size}")
        skip = ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                               max_file_size=self.coursedir.max_file_size, log=self.log)
        old_umask = os.umask(0o027)
        try:
            self._copy_tree(src, dest, skip)
        finally:
            os.umask(old_umask)

    def _copy_tree(self, src, dest, skip):
        os.mkdir(dest, 0o750)
        names = os.listdir(src)
        ignored = set(skip(src, names))
        for name in names:
            if name in ignored:
                continue
            source, target = os.path.join(src, name), os.path.join(dest, name)
            if os.path.isdir(source) and not os.path.islink(source):
                self._copy_tree(source, target, skip)
            elif os.path.isfile(source) and not os.path.islink(source):
                with open(source, "rb") as reader, open(target, "xb") as writer:
                    shutil.copyfileobj(reader, writer)

    def set_perms(self, dest, fileperms, dirperms):
        if self._in_inbox(dest):  # leave the modes it was made with: a chmod would drop the group's setgid
            return
        super().set_perms(dest, fileperms, dirperms)

    def copy_files(self):
        old_umask = os.umask(0o027)  # timestamp.txt and submission_secret.txt: 0640 as they are made
        try:
            super().copy_files()
        finally:
            os.umask(old_umask)
        # nbgrader ends with chmod 0777 on the submission folder: closed again at once.
        os.chmod(os.path.join(self.inbound_path, self.assignment_filename), 0o750)


c.ExchangeFactory.submit = PrivateSubmit
