"""
pytest-inmanta's project fixture on this module: these tests pass with Inmanta's compiler and
with ours (--inmanta-compiler rs); server/tests/server/module_tool.rs runs them both ways.
"""

import pytest
from inmanta.ast import CompilerException
from inmanta.const import ResourceState
from pytest_inmanta.plugin import Project

MODEL = """
import rsexample
import std::testing

first = std::testing::NullResource(name="first", agentname="internal")
second = std::testing::NullResource(name="second", agentname="internal", requires=first)
holder = rsexample::Holder(name="h", data={"a": [1, 2], "b": "text"}, doubled=rsexample::double(21))
holder.items += rsexample::Item(label="x")
holder.items += rsexample::Item(label="y")
holder.main = rsexample::Item(label="main")
std::print("compiled {{holder.name}}")
"""


def test_resources_of_the_compile(project: Project) -> None:
    project.compile(MODEL)
    first = project.get_resource("std::testing::NullResource", name="first")
    assert first is not None
    assert first.name == "first"
    assert first.id.agent_name == "internal"
    second = project.get_resource("std::testing::NullResource", name="second")
    assert first.id in {r for r in second.requires} or str(first.id) in {str(r) for r in second.requires}
    assert project.get_resource("std::testing::NullResource", name="absent") is None
    assert len(project.resources) == 2


def test_instances_with_their_attributes_and_relations(project: Project) -> None:
    project.compile(MODEL)
    holders = project.get_instances("rsexample::Holder")
    assert len(holders) == 1
    holder = holders[0]
    assert holder.name == "h"
    assert holder.data == {"a": [1, 2], "b": "text"}
    assert holder.doubled == 42
    assert sorted(item.label for item in holder.items) == ["x", "y"]
    assert holder.main.label == "main"
    assert len(project.get_instances("rsexample::Item")) == 3
    assert len(project.get_instances("std::testing::NullResource")) == 2


def test_plugin_function(project: Project) -> None:
    project.compile("import rsexample")
    assert project.get_plugin_function("double")(5) == 10


def test_stdout(project: Project) -> None:
    project.compile(MODEL)
    assert "compiled h" in project.get_stdout()


def test_deploy_and_dryrun(project: Project) -> None:
    project.compile(MODEL)
    changes = project.dryrun_resource("std::testing::NullResource", name="first")
    assert changes == {}
    result = project.deploy_resource_v2("std::testing::NullResource", name="first")
    result.assert_status(ResourceState.deployed)


def test_model_error(project: Project) -> None:
    with pytest.raises(CompilerException) as error:
        project.compile("import rsexample\nrsexample::Holder(name=1, data={})\n")
    assert "name" in str(error.value)
