"""A resource and a dependency manager that orders the files of a host by path."""

import inmanta.resources
from inmanta.export import dependency_manager


@inmanta.resources.resource("ordered::File", agent="host.name", id_attribute="path")
class File(inmanta.resources.PurgeableResource):
    fields = ("path",)


@dependency_manager
def in_path_order(model, resources) -> None:
    """Each file of a host requires the one before it in path order."""
    by_host = {}
    for resource in resources.values():
        if isinstance(resource, File):
            by_host.setdefault(resource.id.get_agent_name(), []).append(resource)
    for files in by_host.values():
        files.sort(key=lambda r: r.path)
        for before, after in zip(files, files[1:]):
            after.requires.add(before.id)
